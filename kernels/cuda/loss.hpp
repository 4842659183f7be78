#pragma once
// Softmax cross-entropy on the GPU: the calls of kernels/cpu/loss.hpp on device pointers
// (logits [tokens, vocab], targets int[tokens], logsumexp [tokens]).

namespace twinsim::kernels::cuda {

// Returns the mean loss to the host, so it waits for the current stream.
float cross_entropy_forward(const float* logits, const int* targets, float* logsumexp, int tokens,
                            int vocab);

// The same without waiting: writes the mean loss to one device float.
void cross_entropy_forward_async(const float* logits, const int* targets, float* logsumexp,
                                 float* mean_loss, int tokens, int vocab);

// dlogits = (softmax - onehot(target)) dloss / tokens; dlogits may be logits (in place).
void cross_entropy_backward(const float* logits, const int* targets, const float* logsumexp,
                            float dloss, float* dlogits, int tokens, int vocab);

}  // namespace twinsim::kernels::cuda
