#pragma once
// LayerNorm and RMSNorm on the GPU: the calls of kernels/cpu/norm.hpp on device pointers.
// One block per row for the statistics and dx; the gamma/beta grads are column sums.

namespace twinsim::kernels::cuda {

void layernorm_forward(const float* x, const float* gamma, const float* beta, float* y,
                       float* mean, float* rstd, int rows, int dim, float eps);
void layernorm_backward(const float* dy, const float* x, const float* gamma, const float* mean,
                        const float* rstd, float* dx, float* dgamma, float* dbeta, int rows,
                        int dim, bool accumulate);

void rmsnorm_forward(const float* x, const float* gamma, float* y, float* rstd, int rows, int dim,
                     float eps);
void rmsnorm_backward(const float* dy, const float* x, const float* gamma, const float* rstd,
                      float* dx, float* dgamma, int rows, int dim, bool accumulate);

}  // namespace twinsim::kernels::cuda
