// The `model:` section: a catalog name or an inline architecture (SCENARIO.md).
#include <filesystem>

#include "scenario/errors.hpp"
#include "scenario/hf_config.hpp"
#include "scenario/yaml_merge.hpp"
#include "scenario/mapping_reader.hpp"
#include "scenario/read_sections.hpp"

namespace twinsim {

namespace {

constexpr std::int64_t kMaxDim = std::int64_t{1} << 31;  // any real width fits easily

MlaSpec read_mla(MappingReader& parent, const std::string& key) {
  MappingReader r(parent.child(key), parent.key_path(key));
  MlaSpec a;
  a.q_lora_rank = r.integer("q_lora_rank", 0, 0, kMaxDim);
  a.kv_lora_rank = r.required_integer("kv_lora_rank", 1, kMaxDim);
  a.qk_nope_head_dim = r.required_integer("qk_nope_head_dim", 1, kMaxDim);
  a.qk_rope_head_dim = r.required_integer("qk_rope_head_dim", 1, kMaxDim);
  a.v_head_dim = r.required_integer("v_head_dim", 1, kMaxDim);
  r.reject_unknown();
  return a;
}

// The config.json at `file_or_name` when it exists; refused as missing when it does not but
// is written as a path; else the catalog model of that name.
YAML::Node model_node_from_file_or_catalog(const std::string& file_or_name, const std::string& path) {
  std::error_code error;
  if (std::filesystem::exists(file_or_name, error)) return model_node_from_hf_config_file(file_or_name, path);
  if (written_as_path(file_or_name)) throw ScenarioError(path, file_or_name, "is missing: no such file");
  return catalog_model_node(file_or_name, path);
}

// `model: {hf_config: FILE, ...}`: the mapped config.json, the keys beside it overriding
// (as beside `preset`). FILE is a path (a scenario file's relative paths are taken from
// its folder by load_scenario_file), the name of a config in models/catalog/hf, or the
// config's contents as a mapping (Python: json.load of the file).
YAML::Node resolve_hf_config(const YAML::Node& node, const std::string& path, std::string& name) {
  const YAML::Node config = node["hf_config"];
  const std::string where = path + ".hf_config";
  YAML::Node overlay = YAML::Clone(node);
  overlay.remove("hf_config");
  if (overlay["preset"].IsDefined()) throw ScenarioError(path + ".preset", "", "cannot be given with hf_config");
  if (config.IsMap()) {
    const YAML::Node id = config["_name_or_path"];
    name = id.IsDefined() && id.IsScalar() ? id.Scalar() : "hf_config";
    return merge_mappings(model_node_from_hf_config(config, where), overlay);
  }
  if (!config.IsScalar() || config.Scalar().empty())
    throw ScenarioError(where, "", "must be the path of a config.json, a catalog name, or the config itself");
  name = std::filesystem::path(config.Scalar()).stem().string();
  return merge_mappings(model_node_from_file_or_catalog(config.Scalar(), where), overlay);
}

MoeSpec read_moe(MappingReader& parent, const std::string& key) {
  MappingReader r(parent.child(key), parent.key_path(key));
  MoeSpec e;
  e.experts = static_cast<int>(r.required_integer("experts", 1, 1 << 20));
  e.top_k = static_cast<int>(r.required_integer("top_k", 1, 1 << 20));
  e.expert_ffn_hidden = r.required_integer("expert_ffn_hidden", 1, kMaxDim);
  e.shared_experts = static_cast<int>(r.integer("shared_experts", 0, 0, 1 << 20));
  e.dense_layers = static_cast<int>(r.integer("dense_layers", 0, 0, 1 << 20));
  e.shared_expert_ffn_hidden = r.integer("shared_expert_ffn_hidden", 0, 0, kMaxDim);
  e.router_bias = r.boolean("router_bias", false);
  e.shared_expert_gate = r.boolean("shared_expert_gate", false);
  e.imbalance = r.number("imbalance", 1.0, 1.0, 1024.0);
  e.capacity_factor = r.number("capacity_factor", 0, 0, 1024.0);
  e.pad_to_capacity = r.boolean("pad_to_capacity", false);
  e.groups = static_cast<int>(r.integer("groups", 0, 0, 1 << 20));
  e.top_groups = static_cast<int>(r.integer("top_groups", 0, 0, 1 << 20));
  r.reject_unknown();
  if (e.pad_to_capacity && e.capacity_factor <= 0)
    throw ScenarioError(r.key_path("pad_to_capacity"), "true", "needs " + r.key_path("capacity_factor") +
                        " (Megatron-core's moe_pad_expert_input_to_capacity needs moe_expert_capacity_factor)");
  if ((e.groups > 0) != (e.top_groups > 0))
    throw ScenarioError(r.key_path(e.groups > 0 ? "top_groups" : "groups"), "", "is needed with " +
                        r.key_path(e.groups > 0 ? "groups" : "top_groups") + " (group-limited routing)");
  if (e.groups > 0 && (e.experts % e.groups != 0 || e.top_groups > e.groups))
    throw ScenarioError(r.key_path("groups"), std::to_string(e.groups),
                        "must divide " + r.key_path("experts") + " and be at least " + r.key_path("top_groups"));
  if (e.shared_experts == 0 && (e.shared_expert_ffn_hidden > 0 || e.shared_expert_gate))
    throw ScenarioError(r.key_path(e.shared_expert_gate ? "shared_expert_gate" : "shared_expert_ffn_hidden"), "",
                        "needs " + r.key_path("shared_experts") + " >= 1");
  if (e.top_k > e.experts)
    throw ScenarioError(r.key_path("top_k"), std::to_string(e.top_k),
                        "exceeds " + r.key_path("experts") + "=" + std::to_string(e.experts));
  return e;
}

}  // namespace


ModelSpec read_model(const YAML::Node& node, const std::string& path) {
  ModelSpec m;
  const YAML::Node full = node.IsMap() && node["hf_config"].IsDefined()
                              ? resolve_hf_config(node, path, m.name)
                              : resolve_preset(node, path, m.name, catalog_model_node);
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
  const std::string activation = r.choice("activation", "gelu", {"gelu", "swiglu", "geglu"});
  m.activation = activation == "gelu" ? Activation::gelu : activation == "swiglu" ? Activation::swiglu : Activation::geglu;
  m.norm = r.choice("norm", "layernorm", {"layernorm", "rmsnorm"}) == "layernorm" ? Norm::layernorm : Norm::rmsnorm;
  m.vocab = r.required_integer("vocab", 1, kMaxDim);
  m.position = r.choice("position", "learned", {"learned", "rope"}) == "learned" ? Position::learned : Position::rope;
  m.rope_scaling = r.choice("rope_scaling", "none", {"none", "yarn"}) == "yarn" ? RopeScaling::yarn : RopeScaling::none;
  if (m.rope_scaling != RopeScaling::none && m.position != Position::rope)
    throw ScenarioError(r.key_path("rope_scaling"), std::string(to_string(m.rope_scaling)),
                        "needs model.position: rope");
  m.max_seq_len = r.integer("max_seq_len", 2048, 1, kMaxDim);
  m.tied_embeddings = r.boolean("tied_embeddings", true);
  m.bias = r.boolean("bias", true);
  m.dropout = r.number("dropout", 0.0, 0.0, 0.99);
  m.qkv_bias = r.boolean("qkv_bias", false);
  m.qk_norm = r.boolean("qk_norm", false);
  m.sandwich_norm = r.boolean("sandwich_norm", false);
  m.attention_sinks = r.boolean("attention_sinks", false);
  m.activation_clamp = r.number("activation_clamp", 0.0, 0.0, 1e6);
  m.sliding_window = r.integer("sliding_window", 0, 0, kMaxDim);
  m.global_every = static_cast<int>(r.integer("global_every", 0, 0, 1 << 20));
  m.mtp_layers = static_cast<int>(r.integer("mtp_layers", 0, 0, 64));
  if (r.has("moe")) m.moe = read_moe(r, "moe");
  if (r.has("mla")) m.mla = read_mla(r, "mla");
  r.reject_unknown();

  check_model(m, path);
  return m;
}

}  // namespace twinsim
