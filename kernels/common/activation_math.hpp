#pragma once
// Per-element activation math shared by the CPU and CUDA kernels.
#include <cmath>

#include "kernels/common/hd.hpp"

namespace twinsim::kernels {

// sqrt(2/pi), the constant of the tanh approximation of GeLU.
constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kGeluCubic = 0.044715f;

// GeLU, tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
// (Hendrycks & Gimpel 2016, Sec. 2; used by GPT-2 and Megatron-LM).
TWINSIM_HD inline float gelu_tanh(float x) {
  float inner = kSqrt2OverPi * (x + kGeluCubic * x * x * x);
  return 0.5f * x * (1.0f + tanhf(inner));
}

// d/dx of gelu_tanh: 0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2),
// t = tanh(inner) (product and chain rule on the formula above).
TWINSIM_HD inline float gelu_tanh_grad(float x) {
  float inner = kSqrt2OverPi * (x + kGeluCubic * x * x * x);
  float t = tanhf(inner);
  float dinner = kSqrt2OverPi * (1.0f + 3.0f * kGeluCubic * x * x);
  return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * dinner;
}

// SiLU / swish: x * sigmoid(x) (Ramachandran et al. 2017; Shazeer 2020 "GLU Variants", Eq. 5).
TWINSIM_HD inline float silu(float x) { return x / (1.0f + expf(-x)); }

// d/dx silu = s (1 + x (1 - s)), s = sigmoid(x).
TWINSIM_HD inline float silu_grad(float x) {
  float s = 1.0f / (1.0f + expf(-x));
  return s * (1.0f + x * (1.0f - s));
}

// SwiGLU: silu(gate) * up (Shazeer 2020 "GLU Variants Improve Transformer", Eq. 5; Llama FFN).
TWINSIM_HD inline float swiglu(float gate, float up) { return silu(gate) * up; }

}  // namespace twinsim::kernels
