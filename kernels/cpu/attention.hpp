#pragma once
// Causal self-attention, plain reference: materializes the [seq, seq] probabilities of
// every (batch, head), so memory is quadratic in seq. The executor uses it as the
// readable ground truth for the flash kernel and for short sequences.
#include "kernels/common/attention_shape.hpp"

namespace twinsim::kernels::cpu {

// out = softmax(q k^T / sqrt(head_dim), causal) v. Saves probs [batch, heads, seq, seq]
// (zero above the diagonal).
void attention_forward(const float* q, const float* k, const float* v, float* out, float* probs,
                       const AttentionShape& shape);

// dq is overwritten; dk and dv are overwritten too (summed over the query heads of a group).
void attention_backward(const float* q, const float* k, const float* v, const float* probs,
                        const float* dout, float* dq, float* dk, float* dv,
                        const AttentionShape& shape);

}  // namespace twinsim::kernels::cpu
