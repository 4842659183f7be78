#pragma once
// Element-wise activations over n contiguous floats.

namespace twinsim::kernels::cpu {

// y = gelu_tanh(x). Saved input: x.
void gelu_forward(const float* x, float* y, long n);
// dx = dy * gelu_tanh'(x).
void gelu_backward(const float* dy, const float* x, float* dx, long n);

// y = silu(gate) * up, gate/up/y of n elements each (the two halves of the FFN's first
// projection, kept as two buffers). Saved inputs: gate and up.
void swiglu_forward(const float* gate, const float* up, float* y, long n);
// dgate = dy * up * silu'(gate); dup = dy * silu(gate).
void swiglu_backward(const float* dy, const float* gate, const float* up, float* dgate,
                     float* dup, long n);

}  // namespace twinsim::kernels::cpu
