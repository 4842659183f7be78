#pragma once
// Softmax cross-entropy math shared by the CPU and CUDA kernels.
#include <cmath>

#include "kernels/common/hd.hpp"

namespace twinsim::kernels {

// d(mean loss)/d logit = (softmax(logit) - onehot) * dloss / tokens, with
// softmax = exp(logit - logsumexp) (the fused softmax + NLL gradient, as in llm.c
// crossentropy_softmax_backward and Megatron's vocab-parallel cross entropy).
TWINSIM_HD inline float cross_entropy_dlogit(float logit, float logsumexp, bool is_target,
                                             float dloss_over_tokens) {
  float p = expf(logit - logsumexp);
  return (p - (is_target ? 1.0f : 0.0f)) * dloss_over_tokens;
}

}  // namespace twinsim::kernels
