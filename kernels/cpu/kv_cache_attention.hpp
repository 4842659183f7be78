#pragma once
// Attention of a serving pass: the n new tokens of each sequence attend over its KV
// cache, in which their own K and V rows were just written (a prefill chunk: n tokens
// after `cached` ones; a decode step: n = 1). Query j of a sequence sits at position
// cached + j and sees cache rows [0, cached + j]: causal. Forward only (inference).
namespace twinsim::kernels::cpu {

struct KvCacheAttentionShape {
  int batch = 1;
  int new_tokens = 1;  // n: queries per sequence in this pass
  int cached = 0;      // tokens already in the cache before this pass
  int cache_rows = 1;  // rows the cache holds per sequence (its stride; >= cached + n)
  int heads = 1;       // query heads (of this GPU)
  int kv_heads = 1;    // K/V heads; heads / kv_heads queries share one (GQA)
  int head_dim = 1;
  // Multi-head latent attention's decode (DeepSeek-V2 §2.1.2, W_UK and W_UV absorbed):
  // the queries read one latent "head" of kv_lora + rope columns, V is its first kv_lora
  // columns, and the scores keep the scale of the original nope + rope head width.
  int v_head_dim = 0;    // V's width per head; 0: head_dim
  long v_row_stride = 0;  // elements between V rows of the cache; 0: kv_heads * V's width
  float scale = 0;        // 0: 1 / sqrt(head_dim)

  int v_dim() const { return v_head_dim > 0 ? v_head_dim : head_dim; }
};

// softmax(q k^T / sqrt(d)) v (Vaswani et al. 2017, Eq. 1), query head h reading K/V head
// h / (heads / kv_heads) (GQA, Ainslie et al. 2023 §2).
// q: [batch, new_tokens, heads * head_dim]; out: [batch, new_tokens, heads * v_dim()];
// k_cache: [batch, cache_rows, kv_heads * head_dim]; v_cache: [batch, cache_rows, ...]
// with V head g's row at g * v_dim() in rows v_row_stride apart.
void kv_cache_attention_forward(const float* q, const float* k_cache, const float* v_cache, float* out,
                                const KvCacheAttentionShape& shape);

}  // namespace twinsim::kernels::cpu
