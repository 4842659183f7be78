#include "kernels/cpu/rope.hpp"

#include <cmath>

#include "kernels/common/rope_math.hpp"

namespace twinsim::kernels::cpu {
namespace {

// direction +1 rotates forward, -1 applies the inverse rotation.
template <class T>
void rotate_all(const T* in, T* out, int batch, int seq, int heads, int head_dim, float theta,
                int pos_offset, float direction) {
  int half = head_dim / 2;
  for (int b = 0; b < batch; ++b)
    for (int s = 0; s < seq; ++s)
      for (int p = 0; p < half; ++p) {
        float angle = rope_angle(pos_offset + s, p, head_dim, theta);
        float c = std::cos(angle), sn = direction * std::sin(angle);
        for (int h = 0; h < heads; ++h) {
          long base = ((static_cast<long>(b) * seq + s) * heads + h) * head_dim;
          float out1, out2;  // both inputs are read before either store (in place)
          rope_rotate(to_float(in[base + p]), to_float(in[base + p + half]), c, sn, &out1, &out2);
          out[base + p] = from_float<T>(out1);
          out[base + p + half] = from_float<T>(out2);
        }
      }
}

}  // namespace

template <class T>
void rope_forward(const T* x, T* y, int batch, int seq, int heads, int head_dim, float theta,
                  int pos_offset) {
  rotate_all(x, y, batch, seq, heads, head_dim, theta, pos_offset, 1.0f);
}

template <class T>
void rope_backward(const T* dy, T* dx, int batch, int seq, int heads, int head_dim, float theta,
                   int pos_offset) {
  rotate_all(dy, dx, batch, seq, heads, head_dim, theta, pos_offset, -1.0f);
}

#define TWINSIM_ROPE_INSTANTIATE(T)                                                 \
  template void rope_forward<T>(const T*, T*, int, int, int, int, float, int);      \
  template void rope_backward<T>(const T*, T*, int, int, int, int, float, int);
TWINSIM_ROPE_INSTANTIATE(float)
TWINSIM_ROPE_INSTANTIATE(bf16)
TWINSIM_ROPE_INSTANTIATE(fp16)
#undef TWINSIM_ROPE_INSTANTIATE

}  // namespace twinsim::kernels::cpu
