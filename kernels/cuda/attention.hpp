#pragma once
// Attention with its probabilities materialised, on the GPU: the calls of
// kernels/cpu/attention.hpp (training, probs [batch, heads, seq, seq] saved) and
// kernels/cpu/kv_cache_attention.hpp (a serving pass over the KV cache) on device pointers,
// fp32. Plain kernels, one block per query (or key) row, written to be checked against the
// CPU ones rather than to be fast: the flash kernels (flash_attention.hpp) are the fast
// path. Unlike those, these take V heads narrower than Q/K heads (multi-head latent attention).
#include "kernels/common/attention_shape.hpp"
#include "kernels/common/kv_cache_shape.hpp"

namespace twinsim::kernels::cuda {

void attention_forward(const float* q, const float* k, const float* v, float* out, float* probs,
                       const AttentionShape& shape);
// dq, dk, dv overwritten. Uses a probs-sized scratch from the stream-ordered pool.
void attention_backward(const float* q, const float* k, const float* v, const float* probs, const float* dout,
                        float* dq, float* dk, float* dv, const AttentionShape& shape);

// Uses a [batch, new_tokens, heads, cached + new_tokens] scratch from the stream-ordered pool.
void kv_cache_attention_forward(const float* q, const float* k_cache, const float* v_cache, float* out,
                                const KvCacheAttentionShape& shape);

}  // namespace twinsim::kernels::cuda
