#include "kernels/cpu/rope.hpp"

#include <cmath>

#include "kernels/common/rope_math.hpp"

namespace twinsim::kernels::cpu {
namespace {

// direction +1 rotates forward, -1 applies the inverse rotation.
void rotate_all(const float* in, float* out, int batch, int seq, int heads, int head_dim,
                float theta, int pos_offset, float direction) {
  int half = head_dim / 2;
  for (int b = 0; b < batch; ++b)
    for (int s = 0; s < seq; ++s)
      for (int p = 0; p < half; ++p) {
        float angle = rope_angle(pos_offset + s, p, head_dim, theta);
        float c = std::cos(angle), sn = direction * std::sin(angle);
        for (int h = 0; h < heads; ++h) {
          long base = ((static_cast<long>(b) * seq + s) * heads + h) * head_dim;
          rope_rotate(in[base + p], in[base + p + half], c, sn, &out[base + p],
                      &out[base + p + half]);
        }
      }
}

}  // namespace

void rope_forward(const float* x, float* y, int batch, int seq, int heads, int head_dim,
                  float theta, int pos_offset) {
  rotate_all(x, y, batch, seq, heads, head_dim, theta, pos_offset, 1.0f);
}

void rope_backward(const float* dy, float* dx, int batch, int seq, int heads, int head_dim,
                   float theta, int pos_offset) {
  rotate_all(dy, dx, batch, seq, heads, head_dim, theta, pos_offset, -1.0f);
}

}  // namespace twinsim::kernels::cpu
