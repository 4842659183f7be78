#pragma once
// Tiny GPT- and Llama-shaped configurations for fast single-rank model tests.
#include "exec/model/transformer_config.hpp"

namespace twinsim::exec::test {

inline TransformerConfig tiny_gpt_config() {
  TransformerConfig c;
  c.model.name = "test-gpt";
  c.model.layers = 2;
  c.model.hidden = 16;
  c.model.heads = 2;
  c.model.kv_heads = 2;
  c.model.head_dim = 8;
  c.model.ffn_hidden = 32;
  c.model.vocab = 24;
  c.model.max_seq_len = 16;
  c.model.activation = Activation::gelu;
  c.model.norm = Norm::layernorm;
  c.model.position = Position::learned;
  c.model.tied_embeddings = true;
  c.model.bias = true;
  c.micro_batch = 2;
  c.seq_len = 8;
  c.first_layer = 0;
  c.end_layer = 2;
  c.init_std = 0.3f;  // large weights so every grad is well above fp32 rounding
  return c;
}

inline TransformerConfig tiny_llama_config() {
  TransformerConfig c = tiny_gpt_config();
  c.model.name = "test-llama";
  c.model.heads = 4;
  c.model.kv_heads = 2;
  c.model.head_dim = 4;
  c.model.ffn_hidden = 24;
  c.model.activation = Activation::swiglu;
  c.model.norm = Norm::rmsnorm;
  c.model.position = Position::rope;
  c.model.tied_embeddings = false;
  c.model.bias = false;
  return c;
}

// DeepSeekMoE-shaped: a dense first layer, then 4 routed experts (top 2) and one shared
// expert per layer.
inline TransformerConfig tiny_moe_config() {
  TransformerConfig c = tiny_llama_config();
  c.model.name = "test-moe";
  c.model.layers = 3;
  c.end_layer = 3;
  MoeSpec moe;
  moe.experts = 4;
  moe.top_k = 2;
  moe.expert_ffn_hidden = 8;
  moe.shared_experts = 1;
  moe.dense_layers = 1;
  c.model.moe = moe;
  return c;
}

// DeepSeek-V2-shaped attention: multi-head latent attention with Q's bottleneck (rank 6),
// a KV latent of 5, per head nope 4 + rope 2 for Q/K and 3 for V; with the MoE above.
inline TransformerConfig tiny_mla_config(bool q_bottleneck = true) {
  TransformerConfig c = tiny_moe_config();
  c.model.name = "test-mla";
  c.model.kv_heads = c.model.heads;
  c.model.head_dim = 6;
  c.model.mla = MlaSpec{q_bottleneck ? 6 : 0, 5, 4, 2, 3};
  return c;
}

}  // namespace twinsim::exec::test
