#pragma once
// The vocabulary-parallel softmax cross-entropy of Megatron-LM (Shoeybi et al. 2019 §3;
// megatron/core/tensor_parallel/cross_entropy.py): each tensor-parallel rank holds the fp32
// logits [tokens, local_vocab] of the vocabulary rows [vocab_start, vocab_start + local_vocab)
// and the per-token statistics cross the group between the stages below, so the full logits
// never do. The caller runs the collectives (none with one rank):
//   1. row_max           -> all-reduce (max) of row_max [tokens]
//   2. row_sums          -> all-reduce (sum) of sums [2 * tokens] (sum_exp, then target_logit)
//   3. loss              -> logsumexp and each token's loss, the same on every rank
//   backward             -> this shard's dlogits, no collective
// With one rank (vocab_start 0, local_vocab = vocab) it is kernels/cpu/loss.hpp's loss.

namespace twinsim::kernels::cpu {

// row_max[t] = max_j logits[t, j] over this shard.
void vocab_parallel_row_max(const float* logits, float* row_max, int tokens, int local_vocab);

// sums[t] = sum_j exp(logits[t, j] - row_max[t]) over this shard (summed in double);
// sums[tokens + t] = logits[t, targets[t] - vocab_start] when the target is in this shard,
// else 0 (so the sum over the ranks is the target's logit). row_max: the group's maximum.
void vocab_parallel_row_sums(const float* logits, const int* targets, const float* row_max, float* sums, int tokens,
                             int local_vocab, int vocab_start);

// lse[t] = row_max[t] + log(sum_exp[t]) (the stable logsumexp); token_loss[t] = lse[t] -
// target_logit[t] = -log softmax(logits)[target]. sums: the group's sums.
void vocab_parallel_loss(const float* row_max, const float* sums, float* lse, float* token_loss, int tokens);

// dlogits = (softmax - onehot(target)) * dloss / tokens over this shard
// (kernels/common/loss_math.hpp); dlogits may be logits (in place, as Megatron does).
void vocab_parallel_loss_backward(const float* logits, const int* targets, const float* lse, float dloss,
                                  float* dlogits, int tokens, int local_vocab, int vocab_start);

}  // namespace twinsim::kernels::cpu
