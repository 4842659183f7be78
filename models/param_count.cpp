#include "models/param_count.hpp"

#include "models/checked_math.hpp"

namespace twinsim {

std::int64_t ffn_params(const ModelSpec& m, std::int64_t ffn) {
  const std::int64_t matrices = m.activation == Activation::swiglu ? 3 : 2;
  std::int64_t p = checked_mul(matrices, checked_mul(m.hidden, ffn));
  // biases: the up (and gate) projections output ffn values, the down projection hidden
  if (m.bias) p += (matrices - 1) * ffn + m.hidden;
  return p;
}

LayerParams layer_params(const ModelSpec& m, std::int64_t layer) {
  LayerParams p;
  const std::int64_t qkv_out = m.q_width() + 2 * m.kv_width();
  p.attention = checked_mul(m.hidden, qkv_out) + checked_mul(m.q_width(), m.hidden);
  if (m.bias) p.attention += qkv_out + m.hidden;
  // LayerNorm has a scale and a shift; RMSNorm (and bias-free LayerNorm) only a scale
  const std::int64_t per_norm = (m.norm == Norm::layernorm && m.bias) ? 2 * m.hidden : m.hidden;
  p.norms = 2 * per_norm;
  if (!m.is_moe_layer(layer)) {
    p.dense_ffn = ffn_params(m, m.ffn_hidden);
    return p;
  }
  const MoeSpec& e = *m.moe;
  const std::int64_t expert = ffn_params(m, e.expert_ffn_hidden);
  p.router = checked_mul(m.hidden, e.experts);
  p.routed_experts = checked_mul(e.experts, expert);
  p.shared_experts = checked_mul(e.shared_experts, expert);
  p.active_experts = checked_mul(e.top_k, expert);
  return p;
}

ParamCount count_params(const ModelSpec& m) {
  ParamCount c;
  c.embedding = checked_mul(m.vocab, m.hidden);
  if (m.position == Position::learned) c.embedding += checked_mul(m.max_seq_len, m.hidden);
  c.output_layer = m.tied_embeddings ? 0 : checked_mul(m.vocab, m.hidden);
  c.final_norm = (m.norm == Norm::layernorm && m.bias) ? 2 * m.hidden : m.hidden;
  c.total = c.embedding + c.output_layer + c.final_norm;
  c.active = c.total;
  for (std::int64_t l = 0; l < m.layers; ++l) {
    const LayerParams lp = layer_params(m, l);
    c.total = checked_add(c.total, lp.total());
    c.active = checked_add(c.active, lp.active());
  }
  return c;
}

}  // namespace twinsim
