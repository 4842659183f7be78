#pragma once
// Fully connected layer y = x W^T + b with W stored [out, in] (PyTorch nn.Linear layout).
// The backward is three separate ops because the simulator schedules the activation
// grad (on the critical path) apart from the weight grads (which can be deferred).

namespace twinsim::kernels::cpu {

// x [tokens, in], weight [out, in], bias [out] or nullptr, y [tokens, out].
void linear_forward(const float* x, const float* weight, const float* bias, float* y, int tokens,
                    int in, int out);

// dx [tokens, in] = dy [tokens, out] W. Saved input: weight.
void linear_backward_input(const float* dy, const float* weight, float* dx, int tokens, int in,
                           int out);

// dweight [out, in] (+)= dy^T x. Saved input: x. accumulate adds across micro-batches.
void linear_backward_weight(const float* dy, const float* x, float* dweight, int tokens, int in,
                            int out, bool accumulate);

// dbias [out] (+)= sum over tokens of dy.
void linear_backward_bias(const float* dy, float* dbias, int tokens, int out, bool accumulate);

}  // namespace twinsim::kernels::cpu
