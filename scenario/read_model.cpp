// The `model:` section: a catalog name or an inline architecture (SCENARIO.md).
#include "scenario/errors.hpp"
#include "scenario/mapping_reader.hpp"
#include "scenario/read_sections.hpp"

namespace twinsim {

namespace {

constexpr std::int64_t kMaxDim = std::int64_t{1} << 31;  // any real width fits easily

MoeSpec read_moe(MappingReader& parent, const std::string& key) {
  MappingReader r(parent.child(key), parent.key_path(key));
  MoeSpec e;
  e.experts = static_cast<int>(r.required_integer("experts", 1, 1 << 20));
  e.top_k = static_cast<int>(r.required_integer("top_k", 1, 1 << 20));
  e.expert_ffn_hidden = r.required_integer("expert_ffn_hidden", 1, kMaxDim);
  e.shared_experts = static_cast<int>(r.integer("shared_experts", 0, 0, 1 << 20));
  e.dense_layers = static_cast<int>(r.integer("dense_layers", 0, 0, 1 << 20));
  r.reject_unknown();
  if (e.top_k > e.experts)
    throw ScenarioError(r.key_path("top_k"), std::to_string(e.top_k),
                        "exceeds " + r.key_path("experts") + "=" + std::to_string(e.experts));
  return e;
}

}  // namespace

ModelSpec read_model(const YAML::Node& node, const std::string& path) {
  ModelSpec m;
  const YAML::Node full = resolve_preset(node, path, m.name, catalog_model_node);
  MappingReader r(full, path);
  r.has("preset");
  m.layers = r.required_integer("layers", 1, 1 << 20);
  m.hidden = r.required_integer("hidden", 1, kMaxDim);
  m.heads = r.required_integer("heads", 1, 1 << 20);
  m.kv_heads = r.integer("kv_heads", m.heads, 1, 1 << 20);
  if (!r.has("head_dim") && m.hidden % m.heads != 0)
    throw ScenarioError(r.key_path("heads"), std::to_string(m.heads),
                        "does not divide " + r.key_path("hidden") + "=" + std::to_string(m.hidden) +
                            " (give model.head_dim to use another head size)");
  m.head_dim = r.integer("head_dim", m.hidden / m.heads, 1, kMaxDim);
  m.ffn_hidden = r.integer("ffn_hidden", 4 * m.hidden, 1, kMaxDim);
  m.activation = r.choice("activation", "gelu", {"gelu", "swiglu"}) == "gelu" ? Activation::gelu : Activation::swiglu;
  m.norm = r.choice("norm", "layernorm", {"layernorm", "rmsnorm"}) == "layernorm" ? Norm::layernorm : Norm::rmsnorm;
  m.vocab = r.required_integer("vocab", 1, kMaxDim);
  m.position = r.choice("position", "learned", {"learned", "rope"}) == "learned" ? Position::learned : Position::rope;
  m.max_seq_len = r.integer("max_seq_len", 2048, 1, kMaxDim);
  m.tied_embeddings = r.boolean("tied_embeddings", true);
  m.bias = r.boolean("bias", true);
  m.dropout = r.number("dropout", 0.0, 0.0, 0.99);
  if (r.has("moe")) m.moe = read_moe(r, "moe");
  r.reject_unknown();

  if (m.heads % m.kv_heads != 0)
    throw ScenarioError(r.key_path("kv_heads"), std::to_string(m.kv_heads),
                        "does not divide " + r.key_path("heads") + "=" + std::to_string(m.heads));
  if (m.moe && m.moe->dense_layers > m.layers)
    throw ScenarioError(r.key_path("moe.dense_layers"), std::to_string(m.moe->dense_layers),
                        "exceeds " + r.key_path("layers") + "=" + std::to_string(m.layers));
  return m;
}

}  // namespace twinsim
