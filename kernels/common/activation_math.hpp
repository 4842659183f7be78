#pragma once
// Per-element activation math shared by the CPU and CUDA kernels.
#include <cmath>

#include "kernels/common/hd.hpp"

namespace twinsim::kernels {

// sqrt(2/pi), the constant of the tanh approximation of GeLU.
constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kGeluCubic = 0.044715f;

// 1 / (1 + exp(-x)); exp overflowing to inf gives 0, as it should.
TWINSIM_HD inline float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

// GeLU, tanh approximation: 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3)
// (Hendrycks & Gimpel 2016, Sec. 2; used by GPT-2 and Megatron-LM), computed as
// x sigmoid(2u), since 0.5 (1 + tanh(u)) = sigmoid(2u) exactly. Not with tanhf: glibc's
// branches on |u|, 21.9 ns per element on N(0,1) data against 12.8 ns on a constant
// (this host, 2026-11-22), so a kernel's time hung on its data and calibration on its
// inputs; expf takes one path for every finite input (5.2 ns on both), and the
// sigmoid form has no cancellation near u = 0.
TWINSIM_HD inline float gelu_tanh(float x) {
  float inner = kSqrt2OverPi * (x + kGeluCubic * x * x * x);
  return x * sigmoid(2.0f * inner);
}

// d/dx of gelu_tanh: s + 2 x s (1 - s) sqrt(2/pi) (1 + 3 * 0.044715 x^2), s = sigmoid(2u)
// (product and chain rule, sigmoid' = s (1 - s)); the same as the tanh form's
// 0.5 (1 + t) + 0.5 x (1 - t^2) u', with 1 + t = 2 s and 1 - t^2 = 4 s (1 - s).
TWINSIM_HD inline float gelu_tanh_grad(float x) {
  float inner = kSqrt2OverPi * (x + kGeluCubic * x * x * x);
  float s = sigmoid(2.0f * inner);
  float dinner = kSqrt2OverPi * (1.0f + 3.0f * kGeluCubic * x * x);
  return s + 2.0f * x * s * (1.0f - s) * dinner;
}

// SiLU / swish: x * sigmoid(x) (Ramachandran et al. 2017; Shazeer 2020 "GLU Variants", Eq. 5).
TWINSIM_HD inline float silu(float x) { return x * sigmoid(x); }

// d/dx silu = s (1 + x (1 - s)), s = sigmoid(x).
TWINSIM_HD inline float silu_grad(float x) {
  float s = sigmoid(x);
  return s * (1.0f + x * (1.0f - s));
}

// SwiGLU: silu(gate) * up (Shazeer 2020 "GLU Variants Improve Transformer", Eq. 5; Llama FFN).
TWINSIM_HD inline float swiglu(float gate, float up) { return silu(gate) * up; }

}  // namespace twinsim::kernels
