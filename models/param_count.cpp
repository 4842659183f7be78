#include "models/param_count.hpp"

#include "models/checked_math.hpp"

namespace twinsim {

std::int64_t ffn_params(const ModelSpec& m, std::int64_t ffn) {
  const std::int64_t matrices = m.gated() ? 3 : 2;
  std::int64_t p = checked_mul(matrices, checked_mul(m.hidden, ffn));
  // biases: the up (and gate) projections output ffn values, the down projection hidden
  if (m.bias) p += (matrices - 1) * ffn + m.hidden;
  return p;
}

std::int64_t norm_params(const ModelSpec& m, std::int64_t width) {
  // LayerNorm has a scale and a shift; RMSNorm (and bias-free LayerNorm) only a scale
  return (m.norm == Norm::layernorm && m.bias) ? 2 * width : width;
}

namespace {

// Q, K, V and output projections. MLA (DeepSeek-V2 §2.1, HF modeling_deepseek): Q through
// an optional low-rank bottleneck (W_DQ, its RMSNorm, W_UQ), K/V from one down-projection
// to the latent plus the shared RoPE key (W_DKV | W_KR), its RMSNorm, the up-projection
// to every head's K_nope and V (W_UK | W_UV), then W_O.
std::int64_t attention_params(const ModelSpec& m) {
  std::int64_t p = 0;
  if (m.mla) {
    const MlaSpec& a = *m.mla;
    p = a.q_lora_rank > 0 ? checked_mul(m.hidden, a.q_lora_rank) + a.q_lora_rank + checked_mul(a.q_lora_rank, m.q_width())
                          : checked_mul(m.hidden, m.q_width());
    p += checked_mul(m.hidden, a.kv_lora_rank + a.qk_rope_head_dim) + a.kv_lora_rank;
    p += checked_mul(a.kv_lora_rank, m.heads * (a.qk_nope_head_dim + a.v_head_dim));
    p += checked_mul(m.v_width(), m.hidden);
    if (m.bias) p += m.hidden;
  } else {
    const std::int64_t qkv_out = m.q_width() + 2 * m.kv_width();
    p = checked_mul(m.hidden, qkv_out) + checked_mul(m.v_width(), m.hidden);
    if (m.bias || m.qkv_bias) p += qkv_out;
    if (m.bias) p += m.hidden;
  }
  if (m.attention_sinks) p += m.heads;  // gpt-oss: one sink logit per head
  return p;
}

}  // namespace

LayerParams layer_params(const ModelSpec& m, std::int64_t layer) {
  LayerParams p;
  p.attention = attention_params(m);
  p.norms = (m.sandwich_norm ? 4 : 2) * norm_params(m, m.hidden);
  if (m.qk_norm) p.norms += 2 * m.qk_head_dim();  // one scale over head_dim for Q, one for K
  if (!m.is_moe_layer(layer)) {
    p.dense_ffn = ffn_params(m, m.ffn_hidden);
    return p;
  }
  const MoeSpec& e = *m.moe;
  const std::int64_t expert = ffn_params(m, e.expert_ffn_hidden);
  p.router = checked_mul(m.hidden, e.experts) + (e.router_bias ? e.experts : 0);
  p.routed_experts = checked_mul(e.experts, expert);
  p.shared_experts = checked_mul(e.shared_experts, ffn_params(m, e.shared_width()));
  if (e.shared_experts > 0 && e.shared_expert_gate) p.shared_experts += m.hidden;
  p.active_experts = checked_mul(e.top_k, expert);
  return p;
}

std::int64_t mtp_module_params(const ModelSpec& m) {
  // DeepSeek-V3 §2.2, Fig. 3: RMSNorms of the hidden state and of the next token's
  // embedding, the projection M [2h -> h], one transformer block (an MoE layer in V3), and
  // the output head's norm; embedding and output head are shared with the main model.
  return 3 * norm_params(m, m.hidden) + checked_mul(2 * m.hidden, m.hidden) + layer_params(m, m.layers).total();
}

ParamCount count_params(const ModelSpec& m) {
  ParamCount c;
  c.embedding = checked_mul(m.vocab, m.hidden);
  if (m.position == Position::learned) c.embedding += checked_mul(m.max_seq_len, m.hidden);
  c.output_layer = m.tied_embeddings ? 0 : checked_mul(m.vocab, m.hidden);
  c.final_norm = norm_params(m, m.hidden);
  c.total = c.embedding + c.output_layer + c.final_norm;
  c.active = c.total;
  for (std::int64_t l = 0; l < m.layers; ++l) {
    const LayerParams lp = layer_params(m, l);
    c.total = checked_add(c.total, lp.total());
    c.active = checked_add(c.active, lp.active());
  }
  c.mtp = checked_mul(m.mtp_layers, mtp_module_params(m));
  return c;
}

namespace {

// One layer's share of tp_summed_grad_params under sequence parallelism.
std::int64_t sequence_parallel_layer_params(const ModelSpec& m, bool moe_layer) {
  std::int64_t p = (m.sandwich_norm ? 4 : 2) * norm_params(m, m.hidden);
  if (m.bias) p += m.hidden;  // the attention's output-projection bias
  if (m.mla) {                // W_DQ (+ its norm), W_DKV | W_KR and its norm, replicated
    const MlaSpec& a = *m.mla;
    if (a.q_lora_rank > 0) p += checked_mul(m.hidden, a.q_lora_rank) + a.q_lora_rank;
    p += checked_mul(m.hidden, a.kv_lora_rank + a.qk_rope_head_dim) + a.kv_lora_rank;
  }
  if (!moe_layer) return p + (m.bias ? m.hidden : 0);  // the FFN's down-projection bias
  const MoeSpec& e = *m.moe;
  p += checked_mul(m.hidden, e.experts) + (e.router_bias ? e.experts : 0);
  if (e.shared_experts > 0 && e.shared_expert_gate) p += m.hidden;
  if (m.bias) p += checked_mul(e.shared_experts, m.hidden);  // the shared experts' down-projection biases
  return p;
}

}  // namespace

std::int64_t tp_summed_grad_params(const ModelSpec& m, bool sequence_parallel, const StagePieces& stage) {
  const auto per_layer = [&](bool moe_layer) {
    const std::int64_t qk = m.qk_norm ? 2 * m.qk_head_dim() : 0;  // Q and K norms, summed by name
    return (sequence_parallel ? sequence_parallel_layer_params(m, moe_layer) : 0) + qk;
  };
  std::int64_t p = checked_mul(stage.dense_layers, per_layer(false));
  if (stage.moe_layers > 0) p += checked_mul(stage.moe_layers, per_layer(true));
  if (!sequence_parallel) return p;
  if (stage.embedding && m.position == Position::learned) p += checked_mul(m.max_seq_len, m.hidden);
  if (stage.head) {
    p += norm_params(m, m.hidden);
    for (std::int64_t k = 0; k < m.mtp_layers; ++k)  // DeepSeek-V3 §2.2: its three norms and its block
      p += 3 * norm_params(m, m.hidden) + sequence_parallel_layer_params(m, m.is_moe_layer(m.layers + k));
  }
  return p;
}

}  // namespace twinsim
