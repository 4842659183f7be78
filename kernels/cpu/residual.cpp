#include "kernels/cpu/residual.hpp"

#include <cstddef>

#include "kernels/cpu/head_view.hpp"

namespace twinsim::kernels::cpu {

template <class T>
void residual_forward(const T* x, const T* branch, const std::type_identity_t<T>* bias, T* y,
                      int rows, int cols) {
  for (int r = 0; r < rows; ++r)
    for (int j = 0; j < cols; ++j) {
      const std::size_t i = static_cast<std::size_t>(r) * cols + j;
      y[i] = from_float<T>(to_float(x[i]) + to_float(branch[i]) + (bias ? to_float(bias[j]) : 0.0f));
    }
}

template <class T>
void residual_backward(const T* dy, T* dbias, int rows, int cols, bool accumulate) {
  // The column sum of linear_backward_bias (rows in order into the running sum), in float.
  RowsOut<T> sums(dbias, cols, accumulate ? Start::stored : Start::zero);
  float* db = sums.data();
  for (int r = 0; r < rows; ++r) {
    const T* row = dy + static_cast<long>(r) * cols;
    for (int j = 0; j < cols; ++j) db[j] += to_float(row[j]);
  }
  sums.store();
}

#define TWINSIM_RESIDUAL_INSTANTIATE(T)                                        \
  template void residual_forward<T>(const T*, const T*, const T*, T*, int, int); \
  template void residual_backward<T>(const T*, T*, int, int, bool);
TWINSIM_RESIDUAL_INSTANTIATE(float)
TWINSIM_RESIDUAL_INSTANTIATE(bf16)
TWINSIM_RESIDUAL_INSTANTIATE(fp16)
#undef TWINSIM_RESIDUAL_INSTANTIATE

}  // namespace twinsim::kernels::cpu
