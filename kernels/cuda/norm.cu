// LayerNorm / RMSNorm. The row statistics are block reductions (reduce.cuh); the
// per-element formulas are those of kernels/common/norm_math.hpp. A null `mean` pointer
// selects RMSNorm in the shared kernels (no centering, no beta).
#include "kernels/common/norm_math.hpp"
#include "kernels/cuda/check.hpp"
#include "kernels/cuda/context.hpp"
#include "kernels/cuda/norm.hpp"
#include "kernels/cuda/reduce.cuh"

namespace twinsim::kernels::cuda {
namespace {

constexpr int kRowThreads = 256;

// One block per row. LayerNorm: two passes (mean, then variance about it) as the CPU
// kernel does, avoiding the cancellation of E[x^2] - E[x]^2. RMSNorm: mean of x^2.
__global__ void norm_forward_kernel(const float* x, const float* gamma, const float* beta, float* y,
                                    float* mean, float* rstd, int dim, float eps) {
  __shared__ float scratch[kWarp];
  long row = blockIdx.x;
  const float* xr = x + row * dim;
  float* yr = y + row * dim;
  bool centered = mean != nullptr;
  float mu = 0.0f;
  if (centered) {
    float s = 0.0f;
    for (int i = threadIdx.x; i < dim; i += blockDim.x) s += xr[i];
    mu = block_sum(s, scratch) / dim;
  }
  float sq = 0.0f;
  for (int i = threadIdx.x; i < dim; i += blockDim.x) sq += (xr[i] - mu) * (xr[i] - mu);
  float rs = reciprocal_std(block_sum(sq, scratch) / dim, eps);
  for (int i = threadIdx.x; i < dim; i += blockDim.x)
    yr[i] = centered ? layernorm_element(xr[i], mu, rs, gamma[i], beta ? beta[i] : 0.0f)
                     : rmsnorm_element(xr[i], rs, gamma[i]);
  if (threadIdx.x == 0) {
    if (centered) mean[row] = mu;
    rstd[row] = rs;
  }
}

// dx of one row per block: needs the row means of g = dy gamma and of g xhat.
__global__ void norm_backward_dx_kernel(const float* dy, const float* x, const float* gamma,
                                        const float* mean, const float* rstd, float* dx, int dim) {
  __shared__ float scratch[kWarp];
  long row = blockIdx.x;
  const float* xr = x + row * dim;
  const float* dyr = dy + row * dim;
  float* dxr = dx + row * dim;
  bool centered = mean != nullptr;
  float mu = centered ? mean[row] : 0.0f, rs = rstd[row];
  float sum_g = 0.0f, sum_g_xhat = 0.0f;
  for (int i = threadIdx.x; i < dim; i += blockDim.x) {
    float g = dyr[i] * gamma[i];
    sum_g += g;
    sum_g_xhat += g * (xr[i] - mu) * rs;
  }
  float mean_g = centered ? block_sum(sum_g, scratch) / dim : 0.0f;
  float mean_g_xhat = block_sum(sum_g_xhat, scratch) / dim;
  for (int i = threadIdx.x; i < dim; i += blockDim.x) {
    float xhat = (xr[i] - mu) * rs;
    dxr[i] = centered ? layernorm_dx(dyr[i], gamma[i], xhat, rs, mean_g, mean_g_xhat)
                      : rmsnorm_dx(dyr[i], gamma[i], xhat, rs, mean_g_xhat);
  }
}

// dgamma[c] (+)= sum_r dy xhat, dbeta[c] (+)= sum_r dy: column sums, laid out like
// column_sum_kernel in activation.cu (32 columns per block, 8 rows per pass, fixed order).
constexpr int kRowsPerPass = 8;
__global__ void norm_param_grads_kernel(const float* dy, const float* x, const float* mean,
                                        const float* rstd, float* dgamma, float* dbeta, int rows,
                                        int dim, bool accumulate) {
  __shared__ float part_gamma[kRowsPerPass][33];
  __shared__ float part_beta[kRowsPerPass][33];
  int col = blockIdx.x * 32 + threadIdx.x;
  float sg = 0.0f, sb = 0.0f;
  if (col < dim)
    for (int r = threadIdx.y; r < rows; r += kRowsPerPass) {
      long i = static_cast<long>(r) * dim + col;
      float xhat = (x[i] - (mean ? mean[r] : 0.0f)) * rstd[r];
      sg += dy[i] * xhat;
      sb += dy[i];
    }
  part_gamma[threadIdx.y][threadIdx.x] = sg;
  part_beta[threadIdx.y][threadIdx.x] = sb;
  __syncthreads();
  if (threadIdx.y != 0 || col >= dim) return;
  float tg = 0.0f, tb = 0.0f;
  for (int j = 0; j < kRowsPerPass; ++j) {
    tg += part_gamma[j][threadIdx.x];
    tb += part_beta[j][threadIdx.x];
  }
  if (dgamma) dgamma[col] = accumulate ? dgamma[col] + tg : tg;  // none for a frozen norm (LoRA)
  if (dbeta) dbeta[col] = accumulate ? dbeta[col] + tb : tb;
}

void norm_backward(const float* dy, const float* x, const float* gamma, const float* mean,
                   const float* rstd, float* dx, float* dgamma, float* dbeta, int rows, int dim,
                   bool accumulate) {
  norm_backward_dx_kernel<<<rows, kRowThreads, 0, current_stream()>>>(dy, x, gamma, mean, rstd, dx, dim);
  CUDA_CHECK_LAUNCH();
  norm_param_grads_kernel<<<(dim + 31) / 32, dim3(32, kRowsPerPass), 0, current_stream()>>>(
      dy, x, mean, rstd, dgamma, dbeta, rows, dim, accumulate);
  CUDA_CHECK_LAUNCH();
}

}  // namespace

void layernorm_forward(const float* x, const float* gamma, const float* beta, float* y,
                       float* mean, float* rstd, int rows, int dim, float eps) {
  norm_forward_kernel<<<rows, kRowThreads, 0, current_stream()>>>(x, gamma, beta, y, mean, rstd, dim, eps);
  CUDA_CHECK_LAUNCH();
}

void layernorm_backward(const float* dy, const float* x, const float* gamma, const float* mean,
                        const float* rstd, float* dx, float* dgamma, float* dbeta, int rows,
                        int dim, bool accumulate) {
  norm_backward(dy, x, gamma, mean, rstd, dx, dgamma, dbeta, rows, dim, accumulate);
}

void rmsnorm_forward(const float* x, const float* gamma, float* y, float* rstd, int rows, int dim,
                     float eps) {
  norm_forward_kernel<<<rows, kRowThreads, 0, current_stream()>>>(x, gamma, nullptr, y, nullptr, rstd,
                                                                  dim, eps);
  CUDA_CHECK_LAUNCH();
}

void rmsnorm_backward(const float* dy, const float* x, const float* gamma, const float* rstd,
                      float* dx, float* dgamma, int rows, int dim, bool accumulate) {
  norm_backward(dy, x, gamma, nullptr, rstd, dx, dgamma, nullptr, rows, dim, accumulate);
}

}  // namespace twinsim::kernels::cuda
