// Hugging Face config.json families, each mapped field by field onto twinsim's model keys.
// The defaults used when a field is absent are those of the family's configuration class
// in transformers (models/<family>/configuration_<family>.py), named beside each.
#include "scenario/hf_config.hpp"

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include "scenario/errors.hpp"
#include "scenario/mapping_reader.hpp"
#include "scenario/suggest.hpp"
#include "scenario/yaml_guard.hpp"

namespace twinsim {

namespace {

constexpr std::int64_t kMaxDim = std::int64_t{1} << 31;

// Fields of every family that change nothing twinsim prices: token ids, numerics of the
// norms and RoPE, initialisation, dtypes, bookkeeping, generation and training-loss knobs.
const std::vector<std::string> kCostFree = {
    "_name_or_path", "architectures", "transformers_version", "torch_dtype", "dtype", "bos_token_id",
    "eos_token_id", "pad_token_id", "initializer_range", "rms_norm_eps", "layer_norm_eps",
    "layer_norm_epsilon", "rope_theta", "rope_scaling", "use_cache", "pretraining_tp", "tokenizer_class",
    "auto_map", "output_router_logits", "router_aux_loss_coef", "router_jitter_noise", "aux_loss_alpha",
    "seq_aux", "norm_topk_prob", "routed_scaling_factor", "scoring_func", "n_group", "topk_group",
    "attention_dropout", "hidden_dropout", "embedding_dropout", "resid_pdrop", "embd_pdrop",
    "attn_pdrop", "ep_size", "bos_token", "eos_token", "is_decoder", "use_return_dict", "rope_interleave",
    "partial_rotary_factor", "rope_local_base_freq", "attn_logit_softcapping", "final_logit_softcapping",
    "query_pre_attn_scalar", "cache_implementation", "max_window_layers",
    "use_sliding_window", "quantization_config", "initial_context_length",
    "scale_attn_weights", "scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn", "summary_activation",
    "summary_first_dropout", "summary_proj_to_labels", "summary_type", "summary_use_proj",
    "task_specific_params", "n_ctx", "rotary_emb_base", "rotary_pct", "use_parallel_residual",
    "classifier_dropout"};

// The mapping under construction and the reader of the config, with the family's name.
struct Mapping {
  MappingReader in;
  YAML::Node out{YAML::NodeType::Map};
  std::string family;

  std::int64_t required(const std::string& key) { return in.required_integer(key, 1, kMaxDim); }
  std::int64_t integer(const std::string& key, std::int64_t fallback) { return in.integer(key, fallback, 0, kMaxDim); }
  void refuse(const std::string& key, const std::string& value, const std::string& rule) {
    throw ScenarioError(in.key_path(key), value, rule + " (model_type " + family + ")");
  }
};

// The fields every decoder config shares (Llama's names).
void map_common(Mapping& m, bool tied_default) {
  m.out["layers"] = m.required("num_hidden_layers");
  m.out["hidden"] = m.required("hidden_size");
  const std::int64_t heads = m.required("num_attention_heads");
  m.out["heads"] = heads;
  const std::int64_t kv_heads = m.in.integer("num_key_value_heads", heads, 1, kMaxDim);
  if (heads % kv_heads != 0)
    m.refuse("num_key_value_heads", std::to_string(kv_heads),
             "does not divide num_attention_heads=" + std::to_string(heads));
  m.out["kv_heads"] = kv_heads;
  if (m.in.has("head_dim")) m.out["head_dim"] = m.required("head_dim");
  m.out["vocab"] = m.required("vocab_size");
  m.out["max_seq_len"] = m.integer("max_position_embeddings", 2048);
  m.out["tied_embeddings"] = m.in.boolean("tie_word_embeddings", tied_default);
  m.out["norm"] = "rmsnorm";
  m.out["position"] = "rope";
  m.out["bias"] = false;
}

void map_silu(Mapping& m, const std::string& key = "hidden_act") {
  const std::string act = m.in.string(key, "silu");
  if (act != "silu" && act != "swish") m.refuse(key, act, "is not a gated SiLU (the family's MLP is gate/up/down)");
  m.out["activation"] = "swiglu";
}

// Llama and Mistral: gated SiLU MLP, RMSNorm, RoPE; attention_bias gives q,k,v,o biases.
void map_llama(Mapping& m) {
  map_common(m, false);  // LlamaConfig/MistralConfig: tie_word_embeddings=False
  map_silu(m);
  m.out["ffn_hidden"] = m.required("intermediate_size");
  const bool attention_bias = m.in.boolean("attention_bias", false);
  const bool mlp_bias = m.in.boolean("mlp_bias", false);
  if (attention_bias != mlp_bias)
    m.refuse("mlp_bias", mlp_bias ? "true" : "false", "differs from attention_bias: twinsim's bias covers both");
  m.out["bias"] = attention_bias;
  if (m.in.has("sliding_window")) {  // Mistral 7B v0.1: every layer windowed (4096)
    m.out["sliding_window"] = m.required("sliding_window");
  }
}

// Mixtral: Mistral with every FFN a top-k of num_local_experts experts of intermediate_size.
void map_mixtral(Mapping& m) {
  map_common(m, false);  // MixtralConfig: tie_word_embeddings=False
  map_silu(m);
  const std::int64_t width = m.required("intermediate_size");
  m.out["ffn_hidden"] = width;
  if (m.in.has("sliding_window")) m.out["sliding_window"] = m.required("sliding_window");
  YAML::Node moe;
  moe["experts"] = m.required("num_local_experts");
  moe["top_k"] = m.required("num_experts_per_tok");
  moe["expert_ffn_hidden"] = width;
  m.out["moe"] = moe;
}

// Qwen2 and Qwen3 (dense and MoE): Q, K, V biases in Qwen2; QK-norm in Qwen3; MoE layers
// everywhere (decoder_sparse_step 1, no mlp_only_layers), Qwen2-MoE with one gated shared expert.
void map_qwen(Mapping& m, bool qwen3, bool moe) {
  map_common(m, false);  // Qwen2Config/Qwen3Config: tie_word_embeddings=False
  map_silu(m);
  m.out["ffn_hidden"] = m.required("intermediate_size");
  if (qwen3) {
    m.out["qk_norm"] = true;  // Qwen3Attention: q_norm, k_norm over head_dim
    m.out["bias"] = m.in.boolean("attention_bias", false);
  } else {
    m.out["qkv_bias"] = true;  // Qwen2Attention: q/k/v_proj bias=True, o_proj bias=False
  }
  m.in.child("sliding_window");  // used only with use_sliding_window
  if (m.in.boolean("use_sliding_window", false))
    m.refuse("use_sliding_window", "true", "windows only the layers from max_window_layers on, which twinsim does not model");
  if (!moe) return;
  if (m.integer("decoder_sparse_step", 1) != 1)
    m.refuse("decoder_sparse_step", std::to_string(m.integer("decoder_sparse_step", 1)), "must be 1: every layer MoE");
  const YAML::Node only_dense = m.in.child("mlp_only_layers");
  if (only_dense.IsDefined() && only_dense.IsSequence() && only_dense.size() > 0)
    m.refuse("mlp_only_layers", "", "lists dense layers among MoE ones, which twinsim does not model");
  YAML::Node e;
  e["experts"] = m.required("num_experts");
  e["top_k"] = m.required("num_experts_per_tok");
  e["expert_ffn_hidden"] = m.required("moe_intermediate_size");
  if (!qwen3) {
    e["shared_experts"] = 1;
    e["shared_expert_ffn_hidden"] = m.required("shared_expert_intermediate_size");
    e["shared_expert_gate"] = true;  // Qwen2MoeSparseMoeBlock.shared_expert_gate: Linear(h, 1)
  }
  m.out["moe"] = e;
}

// The experts every DeepSeek config names alike (DeepSeekMoE, V2, V3): routed and shared
// ones after first_k_dense_replace dense layers, every later layer MoE. A null node (not a
// map) when the config has no routed experts (a dense model in DeepSeek's layout).
YAML::Node deepseek_experts(Mapping& m) {
  if (m.integer("moe_layer_freq", 1) != 1)
    m.refuse("moe_layer_freq", std::to_string(m.integer("moe_layer_freq", 1)), "must be 1: every layer after the dense ones MoE");
  if (!m.in.has("n_routed_experts")) return YAML::Node();
  YAML::Node e;
  e["experts"] = m.required("n_routed_experts");
  e["top_k"] = m.required("num_experts_per_tok");
  e["expert_ffn_hidden"] = m.required("moe_intermediate_size");
  e["shared_experts"] = m.integer("n_shared_experts", 0);
  e["dense_layers"] = m.integer("first_k_dense_replace", 0);
  return e;
}

// DeepSeek-V2/V3: MLA, fine-grained MoE with shared experts after first_k_dense_replace
// dense layers, V3's auxiliary-loss-free bias (topk_method noaux_tc) and MTP modules.
void map_deepseek(Mapping& m, bool v3) {
  map_common(m, false);  // DeepseekV2Config/V3Config: tie_word_embeddings=False
  map_silu(m);
  m.out["ffn_hidden"] = m.required("intermediate_size");
  if (m.in.boolean("attention_bias", false)) m.refuse("attention_bias", "true", "is not modelled with MLA");
  YAML::Node a;
  a["q_lora_rank"] = m.integer("q_lora_rank", 0);  // null in V2-Lite: Q projected directly
  a["kv_lora_rank"] = m.required("kv_lora_rank");
  a["qk_nope_head_dim"] = m.required("qk_nope_head_dim");
  a["qk_rope_head_dim"] = m.required("qk_rope_head_dim");
  a["v_head_dim"] = m.required("v_head_dim");
  m.out["mla"] = a;
  m.out["head_dim"] = a["qk_nope_head_dim"].as<std::int64_t>() + a["qk_rope_head_dim"].as<std::int64_t>();
  YAML::Node e = deepseek_experts(m);
  if (!e.IsMap()) return;  // a dense DeepSeek
  const std::string method = m.in.string("topk_method", v3 ? "noaux_tc" : "greedy");
  if (method != "greedy" && method != "group_limited_greedy" && method != "noaux_tc")
    m.refuse("topk_method", method, "is not one of greedy, group_limited_greedy, noaux_tc");
  e["router_bias"] = method == "noaux_tc";  // e_score_correction_bias, one per expert
  // group-limited routing: the top topk_group of n_group expert groups (V3: nodes)
  if (method != "greedy" && m.in.has("n_group") && m.integer("n_group", 1) > 1) {
    e["groups"] = m.required("n_group");
    e["top_groups"] = m.required("topk_group");
  }
  m.out["moe"] = e;
  if (v3) m.out["mtp_layers"] = m.integer("num_nextn_predict_layers", 0);
}

// DeepSeekMoE (model_type deepseek; deepseek-ai/deepseek-moe-16b-base configuration_deepseek.py,
// Dai et al. 2024): Llama's attention, fine-grained SwiGLU experts with shared ones (one MLP
// of n_shared_experts x moe_intermediate_size) after first_k_dense_replace dense layers.
void map_deepseek_moe(Mapping& m) {
  map_common(m, false);  // DeepseekConfig: tie_word_embeddings=False
  map_silu(m);
  m.out["ffn_hidden"] = m.required("intermediate_size");
  if (m.in.boolean("attention_bias", false)) m.refuse("attention_bias", "true", "is not part of DeepSeekMoE");
  const std::string scoring = m.in.string("scoring_func", "softmax");
  if (scoring != "softmax") m.refuse("scoring_func", scoring, "is not the softmax router of DeepSeekMoE");
  if (YAML::Node e = deepseek_experts(m); e.IsMap()) m.out["moe"] = e;  // else a dense model in DeepSeek's layout
}

// Gemma 2 and 3: GeGLU MLP (gelu_pytorch_tanh), four norms per layer, tied embeddings,
// sliding-window layers (Gemma 2 every other one, Gemma 3 five of six), QK-norm in Gemma 3.
void map_gemma(Mapping& m, bool gemma3) {
  map_common(m, true);  // Gemma2Config/Gemma3TextConfig: tie_word_embeddings=True
  const std::string act = m.in.string("hidden_activation", "gelu_pytorch_tanh");
  if (act != "gelu_pytorch_tanh" && act != "gelu")
    m.refuse("hidden_activation", act, "is not the gated GeLU of the Gemma MLP");
  m.in.string("hidden_act", "gelu_pytorch_tanh");  // older Gemma configs repeat it
  m.out["activation"] = "geglu";
  m.out["ffn_hidden"] = m.required("intermediate_size");
  m.out["sandwich_norm"] = true;  // pre/post attention and pre/post feed-forward norms
  if (m.in.boolean("attention_bias", false)) m.refuse("attention_bias", "true", "is not part of the Gemma family");
  if (gemma3) m.out["qk_norm"] = true;
  if (!m.in.has("sliding_window")) return;
  m.out["sliding_window"] = m.required("sliding_window");
  // Gemma 2: layer i windowed when i is even; Gemma 3: global when (i + 1) % pattern == 0
  m.out["global_every"] = gemma3 ? m.integer("sliding_window_pattern", 6) : 2;
}

// gpt-oss: MoE of SwiGLU experts with biases, attention with biases and sinks, alternating
// 128-token windows (layer_types), a router with a bias.
void map_gpt_oss(Mapping& m) {
  map_common(m, false);  // GptOssConfig: tie_word_embeddings=False
  m.in.string("hidden_act", "silu");
  m.out["activation"] = "swiglu";
  const std::int64_t width = m.required("intermediate_size");
  m.out["ffn_hidden"] = width;
  m.out["bias"] = m.in.boolean("attention_bias", true);  // q,k,v,o and the experts' biases
  m.out["attention_sinks"] = true;
  m.out["activation_clamp"] = m.in.number("swiglu_limit", 0.0, 0.0, 1e6);  // GptOssConfig: 7.0
  YAML::Node e;
  e["experts"] = m.required("num_local_experts");
  // GptOssConfig names it num_experts_per_tok; OpenAI's config repeats it as experts_per_token
  const bool hf_name = m.in.has("num_experts_per_tok"), openai_name = m.in.has("experts_per_token");
  e["top_k"] = m.required(hf_name || !openai_name ? "num_experts_per_tok" : "experts_per_token");
  e["expert_ffn_hidden"] = width;
  e["router_bias"] = true;
  m.out["moe"] = e;
  m.out["sliding_window"] = m.required("sliding_window");
  m.out["global_every"] = 2;  // layer_types: sliding, full, sliding, full, ...
}

// GPT-2: learned positions, LayerNorm with biases, GeLU MLP of n_inner (default 4h), tied.
void map_gpt2(Mapping& m) {
  m.out["layers"] = m.required("n_layer");
  const std::int64_t hidden = m.required("n_embd");
  m.out["hidden"] = hidden;
  m.out["heads"] = m.required("n_head");
  m.out["ffn_hidden"] = m.in.has("n_inner") ? m.required("n_inner") : 4 * hidden;
  m.out["vocab"] = m.required("vocab_size");
  m.out["max_seq_len"] = m.required("n_positions");
  const std::string act = m.in.string("activation_function", "gelu_new");
  if (act.rfind("gelu", 0) != 0) m.refuse("activation_function", act, "is not a GeLU");
  m.out["activation"] = "gelu";
  m.out["norm"] = "layernorm";
  m.out["position"] = "learned";
  m.out["tied_embeddings"] = m.in.boolean("tie_word_embeddings", true);
  m.out["bias"] = true;
}

// GPT-NeoX (Pythia, GPT-NeoX-20B): LayerNorm with biases, GeLU MLP, rotary on part of each
// head (no parameters), untied output layer; the parallel residual changes no parameter.
void map_gpt_neox(Mapping& m) {
  map_common(m, false);  // GPTNeoXConfig: tie_word_embeddings=False
  m.out["norm"] = "layernorm";
  m.out["bias"] = m.in.boolean("attention_bias", true);
  const std::string act = m.in.string("hidden_act", "gelu");
  if (act.rfind("gelu", 0) != 0) m.refuse("hidden_act", act, "is not a GeLU");
  m.out["activation"] = "gelu";
  m.out["ffn_hidden"] = m.required("intermediate_size");
}

using FamilyMapper = std::function<void(Mapping&)>;

const std::map<std::string, FamilyMapper>& families() {
  static const std::map<std::string, FamilyMapper> f = {
      {"llama", map_llama},
      {"mistral", map_llama},
      {"mixtral", map_mixtral},
      {"qwen2", [](Mapping& m) { map_qwen(m, false, false); }},
      {"qwen2_moe", [](Mapping& m) { map_qwen(m, false, true); }},
      {"qwen3", [](Mapping& m) { map_qwen(m, true, false); }},
      {"qwen3_moe", [](Mapping& m) { map_qwen(m, true, true); }},
      {"deepseek", map_deepseek_moe},
      {"deepseek_v2", [](Mapping& m) { map_deepseek(m, false); }},
      {"deepseek_v3", [](Mapping& m) { map_deepseek(m, true); }},
      {"gemma2", [](Mapping& m) { map_gemma(m, false); }},
      {"gemma3_text", [](Mapping& m) { map_gemma(m, true); }},
      {"gpt_oss", map_gpt_oss},
      {"gpt2", map_gpt2},
      {"gpt_neox", map_gpt_neox},
  };
  return f;
}

// Gemma 3's multimodal config nests the language model in text_config; the vision tower
// is outside what twinsim prices, so it must be asked for explicitly (refused otherwise).
void refuse_multimodal(const YAML::Node& config, const std::string& path) {
  const YAML::Node type = config["model_type"];
  if (type.IsDefined() && type.IsScalar() && type.Scalar() == "gemma3")
    throw ScenarioError(path + ".model_type", "gemma3",
                        "is a vision-language model: give its text_config (model_type gemma3_text) to "
                        "price the language model alone");
}

// rope_scaling's kind (rope_type; older configs say type): YaRN changes the kernel that
// rotates Q and K (ModelSpec::RopeScaling); the other kinds (linear, dynamic, llama3, longrope)
// only rescale the frequencies, which costs nothing (hence rope_scaling stays in kCostFree).
void map_rope_scaling(Mapping& m) {
  const YAML::Node scaling = m.in.child("rope_scaling");
  if (!scaling.IsDefined() || !scaling.IsMap() || !m.out["position"] || m.out["position"].as<std::string>() != "rope")
    return;
  const YAML::Node kind = scaling["rope_type"] ? scaling["rope_type"] : scaling["type"];
  if (kind && kind.IsScalar() && kind.Scalar() == "yarn") m.out["rope_scaling"] = "yarn";
}

}  // namespace

std::vector<std::string> hf_model_types() {
  std::vector<std::string> names;
  for (const auto& [name, mapper] : families()) names.push_back(name);
  return names;
}

YAML::Node model_node_from_hf_config(const YAML::Node& raw, const std::string& path) {
  if (!raw.IsMap()) throw ScenarioError(path, "", "must be a JSON object (a Hugging Face config.json)");
  refuse_multimodal(raw, path);
  Mapping m{MappingReader(raw, path), YAML::Node(YAML::NodeType::Map), ""};
  m.family = m.in.string("model_type", "");
  if (m.family.empty()) throw ScenarioError(path + ".model_type", "", "is required");
  const auto it = families().find(m.family);
  if (it == families().end())
    throw ScenarioError(path + ".model_type", m.family,
                        "is not a supported family" + did_you_mean(m.family, hf_model_types()));
  it->second(m);
  map_rope_scaling(m);
  for (const std::string& key : kCostFree) m.in.child(key);
  // Gemma/gpt-oss list each layer's attention kind; the family's pattern must match it
  if (const YAML::Node kinds = m.in.child("layer_types"); kinds.IsDefined() && kinds.IsSequence()) {
    const std::int64_t every = m.out["global_every"] ? m.out["global_every"].as<std::int64_t>() : 0;
    for (std::size_t i = 0; i < kinds.size(); ++i) {
      const bool full = kinds[i].IsScalar() && kinds[i].Scalar() == "full_attention";
      const bool expect_full = !m.out["sliding_window"] || (every > 0 && (i + 1) % every == 0);
      if (full != expect_full)
        throw ScenarioError(path + ".layer_types[" + std::to_string(i) + "]", kinds[i].IsScalar() ? kinds[i].Scalar() : "",
                            "breaks the family's window pattern, which twinsim models (model_type " + m.family + ")");
    }
  }
  m.in.reject_unknown();
  return m.out;
}

YAML::Node model_node_from_hf_config_file(const std::string& file, const std::string& path) {
  std::error_code ec;
  if (std::filesystem::exists(file, ec) && !std::filesystem::is_regular_file(file, ec))
    throw ScenarioError(path, file, "is not a regular file (a directory, device or pipe)");
  const auto size = std::filesystem::file_size(file, ec);
  if (ec) throw ScenarioError(path, file, "cannot be read: " + ec.message());
  if (size > (1u << 20)) throw ScenarioError(path, file, "is larger than 1 MiB, which no config.json is");
  std::ifstream in(file, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in.good() && !in.eof()) throw ScenarioError(path, file, "cannot be read");
  YAML::Node config;
  try {
    config = load_yaml(text.str(), path + "(" + file + ")");
  } catch (const YAML::Exception& e) {
    throw ScenarioError(path, file, "is not valid JSON: line " + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  return model_node_from_hf_config(config, path + "(" + file + ")");
}

bool written_as_path(const std::string& file_or_name) {
  return file_or_name.find('/') != std::string::npos || std::filesystem::path(file_or_name).extension() == ".json";
}

}  // namespace twinsim
