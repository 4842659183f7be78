#pragma once
// LayerNorm and RMSNorm over the last dimension of x [rows, dim]. x, y, gamma, beta and all
// their gradients are stored as T (float, bf16 or fp16; common/storage.hpp); the math and
// the per-row statistics (mean and rstd, or rstd alone, saved by the forward for the
// backward) are float.
#include <type_traits>

#include "kernels/common/storage.hpp"

namespace twinsim::kernels::cpu {

// y = (x - mean) rstd gamma + beta. beta may be nullptr (no bias). Saves float mean[rows],
// rstd[rows].
template <class T>
void layernorm_forward(const T* x, const T* gamma, const std::type_identity_t<T>* beta, T* y,
                       float* mean, float* rstd, int rows, int dim, float eps);

// dx [rows, dim] from dy, x, gamma (T) and mean, rstd (float). dgamma/dbeta [dim] (+)= their
// row sums, summed in float and rounded once per element per call; dbeta may be nullptr.
template <class T>
void layernorm_backward(const T* dy, const T* x, const T* gamma, const float* mean,
                        const float* rstd, T* dx, T* dgamma, std::type_identity_t<T>* dbeta,
                        int rows, int dim, bool accumulate);

// y = x rstd gamma, rstd = 1/sqrt(mean(x^2) + eps). Saves float rstd[rows].
template <class T>
void rmsnorm_forward(const T* x, const T* gamma, T* y, float* rstd, int rows, int dim, float eps);

// As layernorm_backward, without the mean and beta.
template <class T>
void rmsnorm_backward(const T* dy, const T* x, const T* gamma, const float* rstd, T* dx,
                      T* dgamma, int rows, int dim, bool accumulate);

}  // namespace twinsim::kernels::cpu
