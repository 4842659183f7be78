#pragma once
// Softmax cross-entropy over logits [tokens, vocab] with integer targets [tokens].

namespace twinsim::kernels::cpu {

// Returns the mean over tokens of -log softmax(logits)[target]. Saves logsumexp [tokens].
float cross_entropy_forward(const float* logits, const int* targets, float* logsumexp, int tokens,
                            int vocab);

// Fused softmax + NLL backward: dlogits = (softmax - onehot(target)) * dloss / tokens.
// dlogits may be the logits buffer itself (in place, as Megatron does to save memory).
void cross_entropy_backward(const float* logits, const int* targets, const float* logsumexp,
                            float dloss, float* dlogits, int tokens, int vocab);

}  // namespace twinsim::kernels::cpu
