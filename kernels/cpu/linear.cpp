#include "kernels/cpu/linear.hpp"

#include "kernels/cpu/gemm.hpp"

namespace twinsim::kernels::cpu {

void linear_forward(const float* x, const float* weight, const float* bias, float* y, int tokens,
                    int in, int out) {
  gemm_forward(x, weight, y, tokens, out, in, false, true);
  if (bias == nullptr) return;
  for (int t = 0; t < tokens; ++t) {
    float* row = y + static_cast<long>(t) * out;
    for (int o = 0; o < out; ++o) row[o] += bias[o];
  }
}

void linear_backward_input(const float* dy, const float* weight, float* dx, int tokens, int in,
                           int out) {
  gemm_forward(dy, weight, dx, tokens, in, out, false, false);
}

void linear_backward_weight(const float* dy, const float* x, float* dweight, int tokens, int in,
                            int out, bool accumulate) {
  gemm_forward(dy, x, dweight, out, in, tokens, true, false, 1.0f, accumulate ? 1.0f : 0.0f);
}

void linear_backward_bias(const float* dy, float* dbias, int tokens, int out, bool accumulate) {
  if (!accumulate)
    for (int o = 0; o < out; ++o) dbias[o] = 0.0f;
  for (int t = 0; t < tokens; ++t) {
    const float* row = dy + static_cast<long>(t) * out;
    for (int o = 0; o < out; ++o) dbias[o] += row[o];
  }
}

}  // namespace twinsim::kernels::cpu
