#include "kernels/cpu/activation.hpp"

#include "kernels/common/activation_math.hpp"

namespace twinsim::kernels::cpu {

template <class T>
void gelu_forward(const T* x, T* y, long n) {
  for (long i = 0; i < n; ++i) y[i] = from_float<T>(gelu_tanh(to_float(x[i])));
}

template <class T>
void gelu_backward(const T* dy, const T* x, T* dx, long n) {
  for (long i = 0; i < n; ++i) dx[i] = from_float<T>(to_float(dy[i]) * gelu_tanh_grad(to_float(x[i])));
}

template <class T>
void swiglu_forward(const T* gate, const T* up, T* y, long n) {
  for (long i = 0; i < n; ++i) y[i] = from_float<T>(swiglu(to_float(gate[i]), to_float(up[i])));
}

template <class T>
void swiglu_backward(const T* dy, const T* gate, const T* up, T* dgate, T* dup, long n) {
  for (long i = 0; i < n; ++i) {
    // Loaded before either store: dgate or dup may alias an input.
    const float d = to_float(dy[i]), g = to_float(gate[i]), u = to_float(up[i]);
    dgate[i] = from_float<T>(d * u * silu_grad(g));
    dup[i] = from_float<T>(d * silu(g));
  }
}

#define TWINSIM_ACTIVATION_INSTANTIATE(T)                                    \
  template void gelu_forward<T>(const T*, T*, long);                         \
  template void gelu_backward<T>(const T*, const T*, T*, long);              \
  template void swiglu_forward<T>(const T*, const T*, T*, long);             \
  template void swiglu_backward<T>(const T*, const T*, const T*, T*, T*, long);
TWINSIM_ACTIVATION_INSTANTIATE(float)
TWINSIM_ACTIVATION_INSTANTIATE(bf16)
TWINSIM_ACTIVATION_INSTANTIATE(fp16)
#undef TWINSIM_ACTIVATION_INSTANTIATE

}  // namespace twinsim::kernels::cpu
