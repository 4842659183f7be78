#pragma once
// The vocabulary-parallel cross-entropy's stages on the GPU: the calls of
// kernels/cpu/vocab_parallel_loss.hpp on device pointers (targets too), on the current
// stream; the caller runs the TP all-reduces (NCCL) between them on device buffers.

namespace twinsim::kernels::cuda {

void vocab_parallel_row_max(const float* logits, float* row_max, int tokens, int local_vocab);
void vocab_parallel_row_sums(const float* logits, const int* targets, const float* row_max, float* sums, int tokens,
                             int local_vocab, int vocab_start);
void vocab_parallel_loss(const float* row_max, const float* sums, float* lse, float* token_loss, int tokens);
void vocab_parallel_loss_backward(const float* logits, const int* targets, const float* lse, float dloss,
                                  float* dlogits, int tokens, int local_vocab, int vocab_start);

}  // namespace twinsim::kernels::cuda
