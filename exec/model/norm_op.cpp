#include "exec/model/norm_op.hpp"


namespace twinsim::exec {


template <class T>
void norm_forward(const ModelContext& ctx, const TransformerConfig& c, const T* x, const T* gamma,
                  const std::type_identity_t<T>* beta, T* y, NormSaved& saved, int rows) {
  const int h = c.hidden();
  saved.rstd = Tensor(MemCategory::activations, rows);
  if (c.rmsnorm()) {
    ctx.kernels().rmsnorm_forward(x, gamma, y, saved.rstd.data(), rows, h, c.norm_eps);
  } else {
    saved.mean = Tensor(MemCategory::activations, rows);
    ctx.kernels().layernorm_forward(x, gamma, beta, y, saved.mean.data(), saved.rstd.data(), rows, h, c.norm_eps);
  }
}

template <class T>
void norm_backward(const ModelContext& ctx, const TransformerConfig& c, const T* dy, const T* x, const T* gamma,
                   const NormSaved& saved, T* dx, T* dgamma, std::type_identity_t<T>* dbeta, int rows) {
  const int h = c.hidden();
  if (c.rmsnorm())
    ctx.kernels().rmsnorm_backward(dy, x, gamma, saved.rstd.data(), dx, dgamma, rows, h, true);
  else
    ctx.kernels().layernorm_backward(dy, x, gamma, saved.mean.data(), saved.rstd.data(), dx, dgamma, dbeta, rows, h,
                          true);
}

#define TWINSIM_NORM_OP(T)                                                                                  \
  template void norm_forward<T>(const ModelContext&, const TransformerConfig&, const T*, const T*, const T*, T*, \
                                NormSaved&, int);                                                              \
  template void norm_backward<T>(const ModelContext&, const TransformerConfig&, const T*, const T*, const T*,   \
                                 const NormSaved&, T*, T*, T*, int);
TWINSIM_NORM_OP(float)
TWINSIM_NORM_OP(kernels::bf16)
TWINSIM_NORM_OP(kernels::fp16)
#undef TWINSIM_NORM_OP

}  // namespace twinsim::exec
