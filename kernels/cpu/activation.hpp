#pragma once
// Element-wise activations over n contiguous elements stored as T (float, bf16 or fp16;
// common/storage.hpp): each is loaded to float, computed in float and rounded once on store.
#include "kernels/common/storage.hpp"

namespace twinsim::kernels::cpu {

// y = gelu_tanh(x); x, y of type T. Saved input: x.
template <class T>
void gelu_forward(const T* x, T* y, long n);
// dx = dy * gelu_tanh'(x); all T.
template <class T>
void gelu_backward(const T* dy, const T* x, T* dx, long n);

// y = silu(gate) * up, gate/up/y of n elements of type T each (the two halves of the FFN's
// first projection, kept as two buffers). Saved inputs: gate and up.
template <class T>
void swiglu_forward(const T* gate, const T* up, T* y, long n);
// dgate = dy * up * silu'(gate); dup = dy * silu(gate); all T.
template <class T>
void swiglu_backward(const T* dy, const T* gate, const T* up, T* dgate, T* dup, long n);

}  // namespace twinsim::kernels::cpu
