#pragma once
// Causal flash attention with GQA on the GPU: the calls of kernels/cpu/flash_attention.hpp
// on device pointers (q, out [batch, seq, heads, head_dim]; k, v [batch, seq, kv_heads,
// head_dim]; logsumexp [batch, heads, seq]). head_dim <= kFlashMaxHeadDim.
#include "kernels/common/attention_shape.hpp"

namespace twinsim::kernels::cuda {

inline constexpr int kFlashMaxHeadDim = 128;

// Throws std::invalid_argument naming the field when the shape is not supported.
void flash_attention_forward(const float* q, const float* k, const float* v, float* out,
                             float* logsumexp, const AttentionShape& shape);

// dq, dk, dv are overwritten (dk, dv summed over the query heads of each kv group).
// Uses a [batch, heads, seq] scratch from the stream-ordered pool (cudaMallocAsync).
void flash_attention_backward(const float* q, const float* k, const float* v, const float* out,
                              const float* logsumexp, const float* dout, float* dq, float* dk,
                              float* dv, const AttentionShape& shape);

}  // namespace twinsim::kernels::cuda
