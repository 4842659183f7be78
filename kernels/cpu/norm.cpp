#include "kernels/cpu/norm.hpp"

#include "kernels/common/norm_math.hpp"

namespace twinsim::kernels::cpu {
namespace {

void zero_unless(bool accumulate, float* v, int n) {
  if (accumulate || v == nullptr) return;
  for (int i = 0; i < n; ++i) v[i] = 0.0f;
}

}  // namespace

void layernorm_forward(const float* x, const float* gamma, const float* beta, float* y,
                       float* mean, float* rstd, int rows, int dim, float eps) {
  for (int r = 0; r < rows; ++r) {
    const float* xr = x + static_cast<long>(r) * dim;
    float* yr = y + static_cast<long>(r) * dim;
    // Two passes (mean, then variance about it) avoid the cancellation of E[x^2] - E[x]^2.
    double sum = 0.0;
    for (int i = 0; i < dim; ++i) sum += xr[i];
    float mu = static_cast<float>(sum / dim);
    double sq = 0.0;
    for (int i = 0; i < dim; ++i) sq += (xr[i] - mu) * (xr[i] - mu);
    float rs = reciprocal_std(static_cast<float>(sq / dim), eps);
    for (int i = 0; i < dim; ++i)
      yr[i] = layernorm_element(xr[i], mu, rs, gamma[i], beta ? beta[i] : 0.0f);
    mean[r] = mu;
    rstd[r] = rs;
  }
}

void layernorm_backward(const float* dy, const float* x, const float* gamma, const float* mean,
                        const float* rstd, float* dx, float* dgamma, float* dbeta, int rows,
                        int dim, bool accumulate) {
  zero_unless(accumulate, dgamma, dim);
  zero_unless(accumulate, dbeta, dim);
  for (int r = 0; r < rows; ++r) {
    const float* xr = x + static_cast<long>(r) * dim;
    const float* dyr = dy + static_cast<long>(r) * dim;
    float* dxr = dx + static_cast<long>(r) * dim;
    float mu = mean[r], rs = rstd[r];
    double sum_g = 0.0, sum_g_xhat = 0.0;
    for (int i = 0; i < dim; ++i) {
      float xhat = (xr[i] - mu) * rs;
      float g = dyr[i] * gamma[i];
      sum_g += g;
      sum_g_xhat += g * xhat;
      dgamma[i] += dyr[i] * xhat;
      if (dbeta) dbeta[i] += dyr[i];
    }
    float mean_g = static_cast<float>(sum_g / dim);
    float mean_g_xhat = static_cast<float>(sum_g_xhat / dim);
    for (int i = 0; i < dim; ++i)
      dxr[i] = layernorm_dx(dyr[i], gamma[i], (xr[i] - mu) * rs, rs, mean_g, mean_g_xhat);
  }
}

void rmsnorm_forward(const float* x, const float* gamma, float* y, float* rstd, int rows, int dim,
                     float eps) {
  for (int r = 0; r < rows; ++r) {
    const float* xr = x + static_cast<long>(r) * dim;
    float* yr = y + static_cast<long>(r) * dim;
    double sq = 0.0;
    for (int i = 0; i < dim; ++i) sq += xr[i] * xr[i];
    float rs = reciprocal_std(static_cast<float>(sq / dim), eps);
    for (int i = 0; i < dim; ++i) yr[i] = rmsnorm_element(xr[i], rs, gamma[i]);
    rstd[r] = rs;
  }
}

void rmsnorm_backward(const float* dy, const float* x, const float* gamma, const float* rstd,
                      float* dx, float* dgamma, int rows, int dim, bool accumulate) {
  zero_unless(accumulate, dgamma, dim);
  for (int r = 0; r < rows; ++r) {
    const float* xr = x + static_cast<long>(r) * dim;
    const float* dyr = dy + static_cast<long>(r) * dim;
    float* dxr = dx + static_cast<long>(r) * dim;
    float rs = rstd[r];
    double sum_g_xhat = 0.0;
    for (int i = 0; i < dim; ++i) {
      float xhat = xr[i] * rs;
      sum_g_xhat += dyr[i] * gamma[i] * xhat;
      dgamma[i] += dyr[i] * xhat;
    }
    float mean_g_xhat = static_cast<float>(sum_g_xhat / dim);
    for (int i = 0; i < dim; ++i) dxr[i] = rmsnorm_dx(dyr[i], gamma[i], xr[i] * rs, rs, mean_g_xhat);
  }
}

}  // namespace twinsim::kernels::cpu
