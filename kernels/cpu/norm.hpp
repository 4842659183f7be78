#pragma once
// LayerNorm and RMSNorm over the last dimension of x [rows, dim].
// The forward saves per-row statistics (mean and rstd, or rstd alone) for the backward.

namespace twinsim::kernels::cpu {

// y = (x - mean) rstd gamma + beta. beta may be nullptr (no bias). Saves mean[rows], rstd[rows].
void layernorm_forward(const float* x, const float* gamma, const float* beta, float* y,
                       float* mean, float* rstd, int rows, int dim, float eps);

// dx [rows, dim] from dy, x, gamma, mean, rstd. dgamma/dbeta [dim] (+)= their row sums;
// dbeta may be nullptr.
void layernorm_backward(const float* dy, const float* x, const float* gamma, const float* mean,
                        const float* rstd, float* dx, float* dgamma, float* dbeta, int rows,
                        int dim, bool accumulate);

// y = x rstd gamma, rstd = 1/sqrt(mean(x^2) + eps). Saves rstd[rows].
void rmsnorm_forward(const float* x, const float* gamma, float* y, float* rstd, int rows, int dim,
                     float eps);

void rmsnorm_backward(const float* dy, const float* x, const float* gamma, const float* rstd,
                      float* dx, float* dgamma, int rows, int dim, bool accumulate);

}  // namespace twinsim::kernels::cpu
