// vocab_parallel_loss.hpp: one block per token row for the row statistics (a block max, then
// a block sum of exp(l - max) in float, so the order differs from the CPU's double sum by
// rounding only), one thread per token for the loss, one per element for the gradient.
#include "kernels/common/loss_math.hpp"
#include "kernels/cuda/check.hpp"
#include "kernels/cuda/context.hpp"
#include "kernels/cuda/reduce.cuh"
#include "kernels/cuda/vocab_parallel_loss.hpp"

namespace twinsim::kernels::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void row_max_kernel(const float* logits, float* row_max, int local_vocab) {
  __shared__ float scratch[kWarp];
  const float* row = logits + static_cast<long>(blockIdx.x) * local_vocab;
  float m = -INFINITY;
  for (int j = threadIdx.x; j < local_vocab; j += blockDim.x) m = fmaxf(m, row[j]);
  m = block_max(m, scratch);
  if (threadIdx.x == 0) row_max[blockIdx.x] = m;
}

__global__ void row_sums_kernel(const float* logits, const int* targets, const float* row_max, float* sums,
                                int tokens, int local_vocab, int vocab_start) {
  __shared__ float scratch[kWarp];
  const int t = blockIdx.x;
  const float* row = logits + static_cast<long>(t) * local_vocab;
  float s = 0.0f;
  for (int j = threadIdx.x; j < local_vocab; j += blockDim.x) s += expf(row[j] - row_max[t]);
  s = block_sum(s, scratch);
  if (threadIdx.x != 0) return;
  sums[t] = s;
  const int j = targets[t] - vocab_start;
  sums[tokens + t] = j >= 0 && j < local_vocab ? row[j] : 0.0f;
}

__global__ void loss_kernel(const float* row_max, const float* sums, float* lse, float* token_loss, int tokens) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= tokens) return;
  lse[t] = row_max[t] + logf(sums[t]);
  token_loss[t] = lse[t] - sums[tokens + t];
}

__global__ void backward_kernel(const float* logits, const int* targets, const float* lse, float scale,
                                float* dlogits, int local_vocab, int vocab_start, long n) {
  for (long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long>(gridDim.x) * blockDim.x) {
    const long t = i / local_vocab;
    const int j = static_cast<int>(i % local_vocab);
    dlogits[i] = cross_entropy_dlogit(logits[i], lse[t], j == targets[t] - vocab_start, scale);
  }
}

}  // namespace

void vocab_parallel_row_max(const float* logits, float* row_max, int tokens, int local_vocab) {
  if (tokens == 0) return;
  row_max_kernel<<<tokens, kThreads, 0, current_stream()>>>(logits, row_max, local_vocab);
  CUDA_CHECK_LAUNCH();
}

void vocab_parallel_row_sums(const float* logits, const int* targets, const float* row_max, float* sums, int tokens,
                             int local_vocab, int vocab_start) {
  if (tokens == 0) return;
  row_sums_kernel<<<tokens, kThreads, 0, current_stream()>>>(logits, targets, row_max, sums, tokens, local_vocab,
                                                              vocab_start);
  CUDA_CHECK_LAUNCH();
}

void vocab_parallel_loss(const float* row_max, const float* sums, float* lse, float* token_loss, int tokens) {
  if (tokens == 0) return;
  loss_kernel<<<(tokens + kThreads - 1) / kThreads, kThreads, 0, current_stream()>>>(row_max, sums, lse, token_loss,
                                                                                     tokens);
  CUDA_CHECK_LAUNCH();
}

void vocab_parallel_loss_backward(const float* logits, const int* targets, const float* lse, float dloss,
                                  float* dlogits, int tokens, int local_vocab, int vocab_start) {
  const long n = static_cast<long>(tokens) * local_vocab;
  if (n == 0) return;
  const float scale = dloss / static_cast<float>(tokens);
  backward_kernel<<<grid_for(n, kThreads), kThreads, 0, current_stream()>>>(logits, targets, lse, scale, dlogits,
                                                                            local_vocab, vocab_start, n);
  CUDA_CHECK_LAUNCH();
}

}  // namespace twinsim::kernels::cuda
