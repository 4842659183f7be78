#include "kernels/cpu/activation.hpp"

#include "kernels/common/activation_math.hpp"

namespace twinsim::kernels::cpu {

void gelu_forward(const float* x, float* y, long n) {
  for (long i = 0; i < n; ++i) y[i] = gelu_tanh(x[i]);
}

void gelu_backward(const float* dy, const float* x, float* dx, long n) {
  for (long i = 0; i < n; ++i) dx[i] = dy[i] * gelu_tanh_grad(x[i]);
}

void swiglu_forward(const float* gate, const float* up, float* y, long n) {
  for (long i = 0; i < n; ++i) y[i] = swiglu(gate[i], up[i]);
}

void swiglu_backward(const float* dy, const float* gate, const float* up, float* dgate,
                     float* dup, long n) {
  for (long i = 0; i < n; ++i) {
    dgate[i] = dy[i] * up[i] * silu_grad(gate[i]);
    dup[i] = dy[i] * silu(gate[i]);
  }
}

}  // namespace twinsim::kernels::cpu
