#include "kernels/cpu/norm.hpp"

#include "kernels/common/norm_math.hpp"
#include "kernels/cpu/head_view.hpp"

namespace twinsim::kernels::cpu {
namespace {

// Where a parameter grad's row sums go: zeros, or the stored grad when accumulating.
Start grad_start(bool accumulate) { return accumulate ? Start::stored : Start::zero; }

}  // namespace

template <class T>
void layernorm_forward(const T* x, const T* gamma, const std::type_identity_t<T>* beta, T* y,
                       float* mean, float* rstd, int rows, int dim, float eps) {
  for (int r = 0; r < rows; ++r) {
    const T* xr = x + static_cast<long>(r) * dim;
    T* yr = y + static_cast<long>(r) * dim;
    // Two passes (mean, then variance about it) avoid the cancellation of E[x^2] - E[x]^2.
    double sum = 0.0;
    for (int i = 0; i < dim; ++i) sum += to_float(xr[i]);
    float mu = static_cast<float>(sum / dim);
    double sq = 0.0;
    for (int i = 0; i < dim; ++i) {
      float centered = to_float(xr[i]) - mu;
      sq += centered * centered;
    }
    float rs = reciprocal_std(static_cast<float>(sq / dim), eps);
    for (int i = 0; i < dim; ++i)
      yr[i] = from_float<T>(layernorm_element(to_float(xr[i]), mu, rs, to_float(gamma[i]),
                                              beta ? to_float(beta[i]) : 0.0f));
    mean[r] = mu;
    rstd[r] = rs;
  }
}

template <class T>
void layernorm_backward(const T* dy, const T* x, const T* gamma, const float* mean,
                        const float* rstd, T* dx, T* dgamma, std::type_identity_t<T>* dbeta,
                        int rows, int dim, bool accumulate) {
  RowsOut<T> dgamma_f(dgamma, dim, grad_start(accumulate));
  RowsOut<T> dbeta_f(dbeta, dim, grad_start(accumulate));
  float* dg = dgamma_f.data();
  float* db = dbeta_f.data();
  for (int r = 0; r < rows; ++r) {
    const T* xr = x + static_cast<long>(r) * dim;
    const T* dyr = dy + static_cast<long>(r) * dim;
    T* dxr = dx + static_cast<long>(r) * dim;
    float mu = mean[r], rs = rstd[r];
    double sum_g = 0.0, sum_g_xhat = 0.0;
    for (int i = 0; i < dim; ++i) {
      float dyi = to_float(dyr[i]);
      float xhat = (to_float(xr[i]) - mu) * rs;
      float g = dyi * to_float(gamma[i]);
      sum_g += g;
      sum_g_xhat += g * xhat;
      if (dg) dg[i] += dyi * xhat;  // none for a frozen norm (LoRA)
      if (db) db[i] += dyi;
    }
    float mean_g = static_cast<float>(sum_g / dim);
    float mean_g_xhat = static_cast<float>(sum_g_xhat / dim);
    for (int i = 0; i < dim; ++i)
      dxr[i] = from_float<T>(layernorm_dx(to_float(dyr[i]), to_float(gamma[i]),
                                          (to_float(xr[i]) - mu) * rs, rs, mean_g, mean_g_xhat));
  }
  dgamma_f.store();
  dbeta_f.store();
}

template <class T>
void rmsnorm_forward(const T* x, const T* gamma, T* y, float* rstd, int rows, int dim, float eps) {
  for (int r = 0; r < rows; ++r) {
    const T* xr = x + static_cast<long>(r) * dim;
    T* yr = y + static_cast<long>(r) * dim;
    double sq = 0.0;
    for (int i = 0; i < dim; ++i) {
      float xi = to_float(xr[i]);
      sq += xi * xi;
    }
    float rs = reciprocal_std(static_cast<float>(sq / dim), eps);
    for (int i = 0; i < dim; ++i)
      yr[i] = from_float<T>(rmsnorm_element(to_float(xr[i]), rs, to_float(gamma[i])));
    rstd[r] = rs;
  }
}

template <class T>
void rmsnorm_backward(const T* dy, const T* x, const T* gamma, const float* rstd, T* dx,
                      T* dgamma, int rows, int dim, bool accumulate) {
  RowsOut<T> dgamma_f(dgamma, dim, grad_start(accumulate));
  float* dg = dgamma_f.data();
  for (int r = 0; r < rows; ++r) {
    const T* xr = x + static_cast<long>(r) * dim;
    const T* dyr = dy + static_cast<long>(r) * dim;
    T* dxr = dx + static_cast<long>(r) * dim;
    float rs = rstd[r];
    double sum_g_xhat = 0.0;
    for (int i = 0; i < dim; ++i) {
      float dyi = to_float(dyr[i]);
      float xhat = to_float(xr[i]) * rs;
      sum_g_xhat += dyi * to_float(gamma[i]) * xhat;
      if (dg) dg[i] += dyi * xhat;  // none for a frozen norm (LoRA)
    }
    float mean_g_xhat = static_cast<float>(sum_g_xhat / dim);
    for (int i = 0; i < dim; ++i)
      dxr[i] = from_float<T>(rmsnorm_dx(to_float(dyr[i]), to_float(gamma[i]), to_float(xr[i]) * rs,
                                        rs, mean_g_xhat));
  }
  dgamma_f.store();
}

#define TWINSIM_NORM_INSTANTIATE(T)                                                               \
  template void layernorm_forward<T>(const T*, const T*, const T*, T*, float*, float*, int, int,  \
                                     float);                                                      \
  template void layernorm_backward<T>(const T*, const T*, const T*, const float*, const float*,   \
                                      T*, T*, T*, int, int, bool);                                \
  template void rmsnorm_forward<T>(const T*, const T*, T*, float*, int, int, float);              \
  template void rmsnorm_backward<T>(const T*, const T*, const T*, const float*, T*, T*, int, int, \
                                    bool);
TWINSIM_NORM_INSTANTIATE(float)
TWINSIM_NORM_INSTANTIATE(bf16)
TWINSIM_NORM_INSTANTIATE(fp16)
#undef TWINSIM_NORM_INSTANTIATE

}  // namespace twinsim::kernels::cpu
