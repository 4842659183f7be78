#pragma once
// The shape of a serving pass's attention over a KV cache (kernels/cpu/kv_cache_attention.hpp),
// shared by every backend's kernel of that name.
#include "kernels/common/hd.hpp"

namespace twinsim::kernels {

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

  TWINSIM_HD int v_dim() const { return v_head_dim > 0 ? v_head_dim : head_dim; }
};

}  // namespace twinsim::kernels
