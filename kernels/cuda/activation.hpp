#pragma once
// Element-wise activations on the GPU: the calls of kernels/cpu/activation.hpp on device
// pointers, plus the bias + GeLU fusion of the MLP's first projection.

namespace twinsim::kernels::cuda {

void gelu_forward(const float* x, float* y, long n);
void gelu_backward(const float* dy, const float* x, float* dx, long n);

// y = gelu_tanh(x + bias) over x, y [rows, cols], bias [cols]: the bias add fused into the
// activation, as Megatron-LM's bias_gelu_impl does, so the pre-activation x + b is never
// written. Saved: x (the GEMM output without bias) and bias.
void bias_gelu_forward(const float* x, const float* bias, float* y, int rows, int cols);
// dx = dy gelu'(x + bias); dbias (+)= column sums of dx (accumulate across micro-batches).
void bias_gelu_backward(const float* dy, const float* x, const float* bias, float* dx,
                        float* dbias, int rows, int cols, bool accumulate);

void swiglu_forward(const float* gate, const float* up, float* y, long n);
void swiglu_backward(const float* dy, const float* gate, const float* up, float* dgate,
                     float* dup, long n);

}  // namespace twinsim::kernels::cuda
