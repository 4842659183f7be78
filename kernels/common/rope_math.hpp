#pragma once
// Rotary position embedding math shared by the CPU and CUDA kernels.
#include <cmath>

#include "kernels/common/hd.hpp"

namespace twinsim::kernels {

// Rotation angle of pair i at position pos: pos * theta^(-2i/d)
// (Su et al. 2021 "RoFormer", Eq. 15: theta_i = 10000^(-2(i-1)/d)).
TWINSIM_HD inline float rope_angle(int pos, int pair, int head_dim, float theta) {
  float inv_freq = powf(theta, -2.0f * static_cast<float>(pair) / static_cast<float>(head_dim));
  return static_cast<float>(pos) * inv_freq;
}

// Rotate-half convention (HF transformers / Llama apply_rotary_pos_emb): element i pairs
// with element i + d/2, out = x * cos + rotate_half(x) * sin, rotate_half(x) = (-x2, x1).
// A 2-D rotation by +angle; its transpose (the backward) is the rotation by -angle.
TWINSIM_HD inline void rope_rotate(float x1, float x2, float cos_a, float sin_a,
                                   float* out1, float* out2) {
  *out1 = x1 * cos_a - x2 * sin_a;
  *out2 = x2 * cos_a + x1 * sin_a;
}

}  // namespace twinsim::kernels
