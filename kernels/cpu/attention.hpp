#pragma once
// Causal self-attention, plain reference: materializes the [seq, seq] probabilities of
// every (batch, head), so memory is quadratic in seq. The executor uses it as the
// readable ground truth for the flash kernel and for short sequences.
// q, k, v, out, probs and their grads are stored as T (float, bf16 or fp16;
// common/storage.hpp). Each head is computed in float and rounded once on store; probs are
// kept in T, as Megatron-LM keeps the softmax output in the activation type.
#include "kernels/common/attention_shape.hpp"
#include "kernels/common/storage.hpp"

namespace twinsim::kernels::cpu {

// out = softmax(q k^T / sqrt(head_dim), causal) v. Saves probs [batch, heads, seq, seq]
// (zero above the diagonal). out is computed from the float probabilities, before they are
// rounded to T for probs.
template <class T>
void attention_forward(const T* q, const T* k, const T* v, T* out, T* probs,
                       const AttentionShape& shape);

// dq is overwritten; dk and dv are overwritten too (summed in float over the query heads of
// a group, then rounded once).
template <class T>
void attention_backward(const T* q, const T* k, const T* v, const T* probs, const T* dout, T* dq,
                        T* dk, T* dv, const AttentionShape& shape);

}  // namespace twinsim::kernels::cpu
