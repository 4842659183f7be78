#pragma once
// Optimizer steps over n contiguous parameters and their gradients. params and the
// optimizer states are fp32 (the master weights of mixed precision, Micikevicius et al.
// 2018 §3.1); grads are stored as G (float, bf16 or fp16; common/storage.hpp) and loaded
// to float.
#include "kernels/common/optimizer_math.hpp"
#include "kernels/common/storage.hpp"

namespace twinsim::kernels::cpu {

using kernels::AdamWConfig;  // kernels/common/optimizer_math.hpp

// step is 1 for the first update (it sets the bias correction 1 - beta^step).
// m and v (first and second moments, float) start at zero.
template <class G>
void adamw_step(float* params, const G* grads, float* m, float* v, long n, int step,
                const AdamWConfig& config);

using kernels::SgdConfig;

// momentum_buf (n floats, starting at zero) may be nullptr when momentum is 0.
template <class G>
void sgd_step(float* params, const G* grads, float* momentum_buf, long n, const SgdConfig& config);

}  // namespace twinsim::kernels::cpu
