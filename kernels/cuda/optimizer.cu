// One thread per parameter, running adamw_update / sgd_update of
// kernels/common/optimizer_math.hpp (the formulas the CPU optimizer tests check).
#include <cmath>

#include "kernels/common/optimizer_math.hpp"
#include "kernels/cuda/check.hpp"
#include "kernels/cuda/context.hpp"
#include "kernels/cuda/optimizer.hpp"

namespace twinsim::kernels::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void adamw_kernel(float* params, const float* grads, float* m, float* v, long n,
                             AdamWConfig c, float bias1, float bias2) {
  for (long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long>(gridDim.x) * blockDim.x)
    adamw_update(&params[i], grads[i], &m[i], &v[i], c.lr, c.beta1, c.beta2, c.eps,
                 c.weight_decay, bias1, bias2);
}

__global__ void sgd_kernel(float* params, const float* grads, float* momentum_buf, long n, SgdConfig c) {
  for (long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long>(gridDim.x) * blockDim.x)
    sgd_update(&params[i], grads[i], momentum_buf ? &momentum_buf[i] : nullptr, c.lr, c.momentum,
               c.weight_decay);
}

}  // namespace

void adamw_step(float* params, const float* grads, float* m, float* v, long n, int step,
                const AdamWConfig& c) {
  // Bias corrections 1 - beta^t on the host, exactly as the CPU step computes them
  // (Kingma & Ba 2015, Alg. 1; Loshchilov & Hutter 2019, Alg. 2 lines 9-10).
  float bias1 = 1.0f - std::pow(c.beta1, static_cast<float>(step));
  float bias2 = 1.0f - std::pow(c.beta2, static_cast<float>(step));
  adamw_kernel<<<grid_for(n, kThreads), kThreads, 0, current_stream()>>>(params, grads, m, v, n, c,
                                                                         bias1, bias2);
  CUDA_CHECK_LAUNCH();
}

void sgd_step(float* params, const float* grads, float* momentum_buf, long n, const SgdConfig& c) {
  float* buf = (momentum_buf != nullptr && c.momentum != 0.0f) ? momentum_buf : nullptr;
  sgd_kernel<<<grid_for(n, kThreads), kThreads, 0, current_stream()>>>(params, grads, buf, n, c);
  CUDA_CHECK_LAUNCH();
}

}  // namespace twinsim::kernels::cuda
