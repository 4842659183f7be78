#include "kernels/cpu/optimizer.hpp"

#include <cmath>

#include "kernels/common/optimizer_math.hpp"

namespace twinsim::kernels::cpu {

template <class G>
void adamw_step(float* params, const G* grads, float* m, float* v, long n, int step,
                const AdamWConfig& c) {
  // Bias corrections 1 - beta^t (Kingma & Ba 2015, Alg. 1; Loshchilov & Hutter 2019, Alg. 2 lines 9-10).
  float bias1 = 1.0f - std::pow(c.beta1, static_cast<float>(step));
  float bias2 = 1.0f - std::pow(c.beta2, static_cast<float>(step));
  for (long i = 0; i < n; ++i)
    adamw_update(&params[i], to_float(grads[i]), &m[i], &v[i], c.lr, c.beta1, c.beta2, c.eps,
                 c.weight_decay, bias1, bias2);
}

template <class G>
void sgd_step(float* params, const G* grads, float* momentum_buf, long n, const SgdConfig& c) {
  bool use_buf = momentum_buf != nullptr && c.momentum != 0.0f;
  for (long i = 0; i < n; ++i)
    sgd_update(&params[i], to_float(grads[i]), use_buf ? &momentum_buf[i] : nullptr, c.lr,
               c.momentum, c.weight_decay);
}

#define TWINSIM_OPTIMIZER_INSTANTIATE(G)                                                   \
  template void adamw_step<G>(float*, const G*, float*, float*, long, int, const AdamWConfig&); \
  template void sgd_step<G>(float*, const G*, float*, long, const SgdConfig&);
TWINSIM_OPTIMIZER_INSTANTIATE(float)
TWINSIM_OPTIMIZER_INSTANTIATE(bf16)
TWINSIM_OPTIMIZER_INSTANTIATE(fp16)
#undef TWINSIM_OPTIMIZER_INSTANTIATE

}  // namespace twinsim::kernels::cpu
