#pragma once
// Optimizer steps over n contiguous parameters and their gradients. params and the
// optimizer states are fp32 (the master weights of mixed precision, Micikevicius et al.
// 2018 §3.1); grads are stored as G (float, bf16 or fp16; common/storage.hpp) and loaded
// to float.
#include "kernels/common/storage.hpp"

namespace twinsim::kernels::cpu {

struct AdamWConfig {
  float lr = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.01f;  // decoupled, scaled by lr (torch.optim.AdamW convention)
};

// step is 1 for the first update (it sets the bias correction 1 - beta^step).
// m and v (first and second moments, float) start at zero.
template <class G>
void adamw_step(float* params, const G* grads, float* m, float* v, long n, int step,
                const AdamWConfig& config);

struct SgdConfig {
  float lr = 1e-2f;
  float momentum = 0.0f;
  float weight_decay = 0.0f;
};

// momentum_buf (n floats, starting at zero) may be nullptr when momentum is 0.
template <class G>
void sgd_step(float* params, const G* grads, float* momentum_buf, long n, const SgdConfig& config);

}  // namespace twinsim::kernels::cpu
