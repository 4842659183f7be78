#include "kernels/cpu/vocab_embedding.hpp"

#include <algorithm>
#include <cstddef>

namespace twinsim::kernels::cpu {

template <class T>
void vocab_embedding_forward(const int* tokens, const T* table, T* out, int count, int dim, int row_start, int rows) {
  for (int i = 0; i < count; ++i) {
    const int row = tokens[i] - row_start;
    T* dst = out + static_cast<std::size_t>(i) * dim;
    if (row >= 0 && row < rows) std::copy_n(table + static_cast<std::size_t>(row) * dim, dim, dst);
    else std::fill_n(dst, dim, from_float<T>(0.0f));
  }
}

template <class T>
void vocab_embedding_backward(const int* tokens, const T* dout, T* dtable, int count, int dim, int row_start, int rows) {
  for (int i = 0; i < count; ++i) {
    const int row = tokens[i] - row_start;
    if (row < 0 || row >= rows) continue;
    T* g = dtable + static_cast<std::size_t>(row) * dim;
    const T* d = dout + static_cast<std::size_t>(i) * dim;
    for (int j = 0; j < dim; ++j) g[j] = from_float<T>(to_float(g[j]) + to_float(d[j]));
  }
}

#define TWINSIM_EMBEDDING_INSTANTIATE(T)                                                   \
  template void vocab_embedding_forward<T>(const int*, const T*, T*, int, int, int, int); \
  template void vocab_embedding_backward<T>(const int*, const T*, T*, int, int, int, int);
TWINSIM_EMBEDDING_INSTANTIATE(float)
TWINSIM_EMBEDDING_INSTANTIATE(bf16)
TWINSIM_EMBEDDING_INSTANTIATE(fp16)
#undef TWINSIM_EMBEDDING_INSTANTIATE

}  // namespace twinsim::kernels::cpu
