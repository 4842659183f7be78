#pragma once
// Optimizer steps on the GPU: the calls of kernels/cpu/optimizer.hpp on device pointers,
// with the same config structs (the per-parameter update is kernels/common/optimizer_math.hpp).
#include "kernels/cpu/optimizer.hpp"

namespace twinsim::kernels::cuda {

using AdamWConfig = cpu::AdamWConfig;
using SgdConfig = cpu::SgdConfig;

void adamw_step(float* params, const float* grads, float* m, float* v, long n, int step,
                const AdamWConfig& config);
void sgd_step(float* params, const float* grads, float* momentum_buf, long n,
              const SgdConfig& config);

}  // namespace twinsim::kernels::cuda
