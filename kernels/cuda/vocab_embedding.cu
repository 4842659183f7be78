// vocab_embedding.hpp's lookup (one thread per output element) and gradient (one thread per
// column, tokens in order).
#include "kernels/cuda/check.hpp"
#include "kernels/cuda/context.hpp"
#include "kernels/cuda/vocab_embedding.hpp"

namespace twinsim::kernels::cuda {
namespace {

constexpr int kThreads = 256;

template <class T>
__global__ void lookup_kernel(const int* tokens, const T* table, T* out, int dim, int row_start, int rows, long n) {
  for (long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long>(gridDim.x) * blockDim.x) {
    const int row = tokens[i / dim] - row_start;
    out[i] = row >= 0 && row < rows ? table[static_cast<long>(row) * dim + i % dim] : from_float<T>(0.0f);
  }
}

template <class T>
__global__ void gradient_kernel(const int* tokens, const T* dout, T* dtable, int count, int dim, int row_start,
                                int rows) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (col >= dim) return;
  for (int i = 0; i < count; ++i) {
    const int row = tokens[i] - row_start;
    if (row < 0 || row >= rows) continue;
    T* g = dtable + static_cast<long>(row) * dim + col;
    *g = from_float<T>(to_float(*g) + to_float(dout[static_cast<long>(i) * dim + col]));
  }
}

}  // namespace

template <class T>
void vocab_embedding_forward(const int* tokens, const T* table, T* out, int count, int dim, int row_start, int rows) {
  const long n = static_cast<long>(count) * dim;
  if (n == 0) return;
  lookup_kernel<<<grid_for(n, kThreads), kThreads, 0, current_stream()>>>(tokens, table, out, dim, row_start, rows, n);
  CUDA_CHECK_LAUNCH();
}

template <class T>
void vocab_embedding_backward(const int* tokens, const T* dout, T* dtable, int count, int dim, int row_start, int rows) {
  if (count == 0 || dim == 0) return;
  gradient_kernel<<<(dim + kThreads - 1) / kThreads, kThreads, 0, current_stream()>>>(tokens, dout, dtable, count,
                                                                                       dim, row_start, rows);
  CUDA_CHECK_LAUNCH();
}

#define TWINSIM_EMBEDDING_INSTANTIATE(T)                                                   \
  template void vocab_embedding_forward<T>(const int*, const T*, T*, int, int, int, int); \
  template void vocab_embedding_backward<T>(const int*, const T*, T*, int, int, int, int);
TWINSIM_EMBEDDING_INSTANTIATE(float)
TWINSIM_EMBEDDING_INSTANTIATE(bf16)
TWINSIM_EMBEDDING_INSTANTIATE(fp16)
#undef TWINSIM_EMBEDDING_INSTANTIATE

}  // namespace twinsim::kernels::cuda
