#include "models/litgpt_census.hpp"

namespace twinsim {

std::int64_t litgpt_lora_layer_saved_bytes(const ModelSpec& model, std::int64_t tokens, const LoraSpec& lora) {
  const std::int64_t h = model.hidden, q = model.q_width(), kv = model.kv_heads * model.head_dim;
  const std::int64_t ffn = model.ffn_hidden, adapted = q + kv;  // LoRA's q and v columns
  // per token: the two RMSNorms' inputs (the residual stream) and their rsqrt; LoRA's dropout
  // (bool mask, dropped copy), each adapter's x A, the zero-padded q/v delta; the fused qkv
  // output (v is a view of it, kept by the attention), the roped q and k, the attention's
  // output and fp32 log-sum-exp per head; SwiGLU's fc_1 and fc_2 outputs and silu's output
  std::int64_t per_token = 2 * (2 * h) + 2 * 2 + (1 + 2) * h + 2 * lora.rank * 2 + 2 * adapted + 2 * (q + 2 * kv) +
                           2 * q + 2 * kv + 2 * q + 4 * model.heads + 3 * 2 * ffn;
  // bitsandbytes' MatMul4Bit keeps the input of every frozen 4-bit linear: qkv's (norm_1's
  // output), proj's (the attention output, reshaped), fc_1/fc_2's (norm_2's output), proj's
  if (lora.base == LoraBase::nf4) per_token += 2 * h + 2 * q + 2 * h + 2 * ffn;
  // zero_pad's int64 index of the adapted columns: once a layer, whatever the tokens
  return per_token * tokens + 8 * adapted;
}

}  // namespace twinsim
