#pragma once
// Architectures written out from their papers, so the memory tests need no catalog.
#include "models/model_spec.hpp"

namespace twinsim::test {

// GPT-3 175B as Korthikanti et al. 2022, Table 3 trains it: a = 96, h = 12288, L = 96,
// s = 2048, v = 51200, dropout on (Megatron default 0.1), LayerNorm with bias, GeLU.
inline ModelSpec gpt3_175b() {
  ModelSpec m;
  m.name = "gpt3-175b";
  m.layers = 96, m.hidden = 12288, m.heads = 96, m.kv_heads = 96, m.head_dim = 128;
  m.ffn_hidden = 4 * 12288, m.vocab = 51200, m.max_seq_len = 2048, m.dropout = 0.1;
  return m;
}

// GPT-2 small (Radford et al. 2019; HF gpt2): 124,439,808 parameters with tied embeddings.
inline ModelSpec gpt2_small() {
  ModelSpec m;
  m.name = "gpt2-small";
  m.layers = 12, m.hidden = 768, m.heads = 12, m.kv_heads = 12, m.head_dim = 64;
  m.ffn_hidden = 3072, m.vocab = 50257, m.max_seq_len = 1024, m.dropout = 0.1;
  return m;
}

// Llama 2 (Touvron et al. 2023, Table 1 and HF config.json): RMSNorm, SwiGLU, RoPE, no bias.
inline ModelSpec llama2(std::int64_t layers, std::int64_t hidden, std::int64_t heads, std::int64_t kv_heads,
                        std::int64_t ffn) {
  ModelSpec m;
  m.layers = layers, m.hidden = hidden, m.heads = heads, m.kv_heads = kv_heads, m.head_dim = hidden / heads;
  m.ffn_hidden = ffn, m.vocab = 32000, m.max_seq_len = 4096;
  m.activation = Activation::swiglu, m.norm = Norm::rmsnorm, m.position = Position::rope;
  m.tied_embeddings = false, m.bias = false;
  return m;
}
inline ModelSpec llama2_7b() { return llama2(32, 4096, 32, 32, 11008); }
inline ModelSpec llama2_13b() { return llama2(40, 5120, 40, 40, 13824); }
inline ModelSpec llama2_70b() { return llama2(80, 8192, 64, 8, 28672); }

// Llama 3 70B (Llama Team 2024, Table 3; HF config.json): GQA with 8 KV heads.
inline ModelSpec llama3_70b() {
  ModelSpec m = llama2(80, 8192, 64, 8, 28672);
  m.vocab = 128256, m.max_seq_len = 8192;
  return m;
}

// Mixtral 8x7B (Jiang et al. 2024, Table 1): 8 experts, top-2, expert FFN 14336.
inline ModelSpec mixtral_8x7b() {
  ModelSpec m = llama2(32, 4096, 32, 8, 14336);
  m.moe = MoeSpec{8, 2, 14336, 0, 0};
  return m;
}

// A tiny multi-head-latent-attention model whose counts the tests derive by hand: h=64,
// 4 heads, Q bottleneck 16, latent 8, nope 8 + rope 4 per head, V 6 per head, SwiGLU FFN 128,
// RMSNorm, no biases, untied, vocab 100, 2 layers.
inline ModelSpec tiny_mla() {
  ModelSpec m;
  m.layers = 2, m.hidden = 64, m.heads = 4, m.kv_heads = 4, m.head_dim = 12, m.ffn_hidden = 128;
  m.activation = Activation::swiglu, m.norm = Norm::rmsnorm, m.position = Position::rope;
  m.vocab = 100, m.tied_embeddings = false, m.bias = false;
  m.mla = MlaSpec{16, 8, 8, 4, 6};
  return m;
}

// A tiny MoE model: the same shape with multi-head attention of 4 heads of 16 and 8
// experts of width 32, top 2, every layer MoE.
inline ModelSpec tiny_moe() {
  ModelSpec m = tiny_mla();
  m.mla.reset();
  m.head_dim = 16, m.vocab = 128;
  m.moe = MoeSpec{};
  m.moe->experts = 8, m.moe->top_k = 2, m.moe->expert_ffn_hidden = 32;
  return m;
}

}  // namespace twinsim::test
