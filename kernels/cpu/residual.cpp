#include "kernels/cpu/residual.hpp"

#include <cstddef>

#include "kernels/cpu/linear.hpp"

namespace twinsim::kernels::cpu {

void residual_forward(const float* x, const float* branch, const float* bias, float* y, int rows, int cols) {
  for (int r = 0; r < rows; ++r)
    for (int j = 0; j < cols; ++j) {
      const std::size_t i = static_cast<std::size_t>(r) * cols + j;
      y[i] = x[i] + branch[i] + (bias ? bias[j] : 0.0f);
    }
}

void residual_backward(const float* dy, float* dbias, int rows, int cols, bool accumulate) {
  linear_backward_bias(dy, dbias, rows, cols, accumulate);  // the same column sum
}

}  // namespace twinsim::kernels::cpu
