#pragma once
// Per-element normalization math shared by the CPU and CUDA kernels. The row
// statistics (mean, rstd, the two backward means) come from a reduction that each
// backend writes its own way; the element formulas below are common.
#include <cmath>

#include "kernels/common/hd.hpp"

namespace twinsim::kernels {

// 1 / sqrt(variance + eps): LayerNorm (Ba et al. 2016, Eq. 4) and RMSNorm
// (Zhang & Sennrich 2019, Eq. 4) both divide by it.
TWINSIM_HD inline float reciprocal_std(float mean_square_deviation, float eps) {
  return 1.0f / sqrtf(mean_square_deviation + eps);
}

// LayerNorm output: (x - mean) * rstd * gamma + beta (Ba et al. 2016, Eq. 4).
TWINSIM_HD inline float layernorm_element(float x, float mean, float rstd, float gamma, float beta) {
  return (x - mean) * rstd * gamma + beta;
}

// LayerNorm input grad: rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * gamma
// (differentiate xhat = (x - mean) rstd through mean and rstd; as in llm.c layernorm_backward).
TWINSIM_HD inline float layernorm_dx(float dy, float gamma, float xhat, float rstd,
                                     float mean_g, float mean_g_xhat) {
  return rstd * (dy * gamma - mean_g - xhat * mean_g_xhat);
}

// RMSNorm output: x * rstd * gamma, rstd = 1/sqrt(mean(x^2) + eps) (Zhang & Sennrich 2019, Eq. 4).
TWINSIM_HD inline float rmsnorm_element(float x, float rstd, float gamma) { return x * rstd * gamma; }

// RMSNorm input grad: rstd * (g - xhat * mean(g * xhat)), g = dy * gamma, xhat = x rstd
// (LayerNorm's formula without the mean-subtraction term).
TWINSIM_HD inline float rmsnorm_dx(float dy, float gamma, float xhat, float rstd, float mean_g_xhat) {
  return rstd * (dy * gamma - xhat * mean_g_xhat);
}

}  // namespace twinsim::kernels
