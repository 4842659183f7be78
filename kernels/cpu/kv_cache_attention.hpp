#pragma once
// Attention of a serving pass: the n new tokens of each sequence attend over its KV
// cache, in which their own K and V rows were just written (a prefill chunk: n tokens
// after `cached` ones; a decode step: n = 1). Query j of a sequence sits at position
// cached + j and sees cache rows [0, cached + j]: causal. Forward only (inference).
#include "kernels/common/kv_cache_shape.hpp"

namespace twinsim::kernels::cpu {

using kernels::KvCacheAttentionShape;  // kernels/common/kv_cache_shape.hpp

// softmax(q k^T / sqrt(d)) v (Vaswani et al. 2017, Eq. 1), query head h reading K/V head
// h / (heads / kv_heads) (GQA, Ainslie et al. 2023 §2).
// q: [batch, new_tokens, heads * head_dim]; out: [batch, new_tokens, heads * v_dim()];
// k_cache: [batch, cache_rows, kv_heads * head_dim]; v_cache: [batch, cache_rows, ...]
// with V head g's row at g * v_dim() in rows v_row_stride apart.
void kv_cache_attention_forward(const float* q, const float* k_cache, const float* v_cache, float* out,
                                const KvCacheAttentionShape& shape);

}  // namespace twinsim::kernels::cpu
