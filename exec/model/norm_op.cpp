#include "exec/model/norm_op.hpp"

#include "kernels/cpu/norm.hpp"

namespace twinsim::exec {

namespace k = twinsim::kernels::cpu;

void norm_forward(const TransformerConfig& c, const float* x, const float* gamma, const float* beta,
                  float* y, NormSaved& saved, int rows) {
  const int h = c.hidden();
  saved.rstd = Tensor(MemCategory::activations, rows);
  if (c.rmsnorm()) {
    k::rmsnorm_forward(x, gamma, y, saved.rstd.data(), rows, h, c.norm_eps);
  } else {
    saved.mean = Tensor(MemCategory::activations, rows);
    k::layernorm_forward(x, gamma, beta, y, saved.mean.data(), saved.rstd.data(), rows, h, c.norm_eps);
  }
}

void norm_backward(const TransformerConfig& c, const float* dy, const float* x, const float* gamma,
                   const NormSaved& saved, float* dx, float* dgamma, float* dbeta, int rows) {
  const int h = c.hidden();
  if (c.rmsnorm())
    k::rmsnorm_backward(dy, x, gamma, saved.rstd.data(), dx, dgamma, rows, h, true);
  else
    k::layernorm_backward(dy, x, gamma, saved.mean.data(), saved.rstd.data(), dx, dgamma, dbeta, rows, h,
                          true);
}

}  // namespace twinsim::exec
