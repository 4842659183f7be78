#include "kernels/cuda/linear.hpp"

#include "kernels/cuda/gemm.hpp"

namespace twinsim::kernels::cuda {

void linear_forward(const float* x, const float* weight, const float* bias, float* y, int tokens,
                    int in, int out) {
  gemm_forward(x, weight, y, tokens, out, in, false, true);  // y = x W^T
  if (bias != nullptr) add_bias(y, bias, tokens, out);
}

void linear_backward_input(const float* dy, const float* weight, float* dx, int tokens, int in,
                           int out) {
  gemm_forward(dy, weight, dx, tokens, in, out, false, false);  // dx = dy W
}

void linear_backward_weight(const float* dy, const float* x, float* dweight, int tokens, int in,
                            int out, bool accumulate) {
  gemm_forward(dy, x, dweight, out, in, tokens, true, false, 1.0f, accumulate ? 1.0f : 0.0f);  // dW = dy^T x
}

void linear_backward_bias(const float* dy, float* dbias, int tokens, int out, bool accumulate) {
  column_sum(dy, dbias, tokens, out, accumulate);
}

}  // namespace twinsim::kernels::cuda
