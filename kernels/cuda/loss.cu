// Fused softmax cross-entropy: one block per token row computes the row's logsumexp
// (max first so exp never overflows), a single block then averages lse - logit[target]
// over the tokens in a fixed order (deterministic). The gradient is the element formula
// cross_entropy_dlogit of kernels/common/loss_math.hpp.
#include "kernels/common/loss_math.hpp"
#include "kernels/cuda/check.hpp"
#include "kernels/cuda/context.hpp"
#include "kernels/cuda/loss.hpp"
#include "kernels/cuda/reduce.cuh"

namespace twinsim::kernels::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void logsumexp_kernel(const float* logits, float* logsumexp, int vocab) {
  __shared__ float scratch[kWarp];
  const float* row = logits + static_cast<long>(blockIdx.x) * vocab;
  float m = -INFINITY;
  for (int j = threadIdx.x; j < vocab; j += blockDim.x) m = fmaxf(m, row[j]);
  m = block_max(m, scratch);
  float s = 0.0f;
  for (int j = threadIdx.x; j < vocab; j += blockDim.x) s += expf(row[j] - m);
  s = block_sum(s, scratch);
  if (threadIdx.x == 0) logsumexp[blockIdx.x] = m + logf(s);
}

// -log softmax(logits)[target] = logsumexp - logit[target], averaged over the tokens.
__global__ void mean_loss_kernel(const float* logits, const int* targets, const float* logsumexp,
                                 float* mean_loss, int tokens, int vocab) {
  __shared__ float scratch[kWarp];
  float s = 0.0f;
  for (int t = threadIdx.x; t < tokens; t += blockDim.x)
    s += logsumexp[t] - logits[static_cast<long>(t) * vocab + targets[t]];
  s = block_sum(s, scratch);
  if (threadIdx.x == 0) *mean_loss = s / tokens;
}

__global__ void cross_entropy_backward_kernel(const float* logits, const int* targets,
                                              const float* logsumexp, float scale, float* dlogits,
                                              int vocab, long n) {
  for (long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long>(gridDim.x) * blockDim.x) {
    long t = i / vocab;
    int j = static_cast<int>(i % vocab);
    dlogits[i] = cross_entropy_dlogit(logits[i], logsumexp[t], j == targets[t], scale);
  }
}

// One device float per host thread for the synchronous forward's result.
float* loss_scalar() {
  thread_local float* scalar = nullptr;  // 4 bytes, kept for the thread's lifetime
  if (scalar == nullptr) CUDA_CHECK(cudaMalloc(&scalar, sizeof(float)));
  return scalar;
}

}  // namespace

void cross_entropy_forward_async(const float* logits, const int* targets, float* logsumexp,
                                 float* mean_loss, int tokens, int vocab) {
  logsumexp_kernel<<<tokens, kThreads, 0, current_stream()>>>(logits, logsumexp, vocab);
  CUDA_CHECK_LAUNCH();
  mean_loss_kernel<<<1, 1024, 0, current_stream()>>>(logits, targets, logsumexp, mean_loss, tokens, vocab);
  CUDA_CHECK_LAUNCH();
}

float cross_entropy_forward(const float* logits, const int* targets, float* logsumexp, int tokens,
                            int vocab) {
  float* device_loss = loss_scalar();
  cross_entropy_forward_async(logits, targets, logsumexp, device_loss, tokens, vocab);
  float loss = 0.0f;
  CUDA_CHECK(cudaMemcpyAsync(&loss, device_loss, sizeof(float), cudaMemcpyDeviceToHost, current_stream()));
  CUDA_CHECK(cudaStreamSynchronize(current_stream()));
  return loss;
}

void cross_entropy_backward(const float* logits, const int* targets, const float* logsumexp,
                            float dloss, float* dlogits, int tokens, int vocab) {
  long n = static_cast<long>(tokens) * vocab;
  float scale = dloss / static_cast<float>(tokens);
  cross_entropy_backward_kernel<<<grid_for(n, kThreads), kThreads, 0, current_stream()>>>(
      logits, targets, logsumexp, scale, dlogits, vocab, n);
  CUDA_CHECK_LAUNCH();
}

}  // namespace twinsim::kernels::cuda
