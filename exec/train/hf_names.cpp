#include "exec/train/hf_names.hpp"

#include "exec/model/transformer_config.hpp"

#include <charconv>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <string>

namespace twinsim::exec {

namespace {

using Params = std::map<std::string, std::pair<ParamSpec, std::vector<float>>>;

// Takes the parameters out of `params` by name, so whatever is left at the end maps nowhere.
class Source {
 public:
  explicit Source(const Params& params) : params_(params) {
    for (const auto& [name, p] : params) left_.insert(name);
  }
  bool has(const std::string& name) const { return params_.contains(name); }
  const std::pair<ParamSpec, std::vector<float>>& take(const std::string& name) {
    const auto it = params_.find(name);
    if (it == params_.end()) throw std::invalid_argument("merged checkpoint has no parameter " + name);
    left_.erase(name);
    return it->second;
  }
  void check_all_taken() const {
    if (!left_.empty())
      throw std::invalid_argument("parameter " + *left_.begin() + " has no Hugging Face name in this layout");
  }

 private:
  const Params& params_;
  std::set<std::string> left_;
};

// As it is: nn.Linear's [out, in], embeddings, norms, biases.
HfTensor same(Source& src, const std::string& from, const std::string& to) {
  const auto& [spec, values] = src.take(from);
  return {to, full_shape(spec), values};
}

// Linear layers stacked along their outputs ([out_i, in] each) and transposed: GPT-2's
// Conv1D keeps [in, sum out_i].
HfTensor conv1d(Source& src, const std::vector<std::string>& from, const std::string& to) {
  std::vector<const std::pair<ParamSpec, std::vector<float>>*> parts;
  std::int64_t out = 0, in = -1;
  for (const std::string& name : from) {
    parts.push_back(&src.take(name));
    out += parts.back()->first.rows;
    in = parts.back()->first.cols;
  }
  HfTensor t{to, {in, out}, std::vector<float>(static_cast<std::size_t>(in * out))};
  std::int64_t first_out = 0;
  for (const auto* p : parts) {
    for (std::int64_t o = 0; o < p->first.rows; ++o)
      for (std::int64_t i = 0; i < in; ++i) t.values[i * out + first_out + o] = p->second[o * in + i];
    first_out += p->first.rows;
  }
  return t;
}

// Vectors side by side: GPT-2's c_attn bias [3h].
HfTensor joined(Source& src, const std::vector<std::string>& from, const std::string& to) {
  HfTensor t{to, {0}, {}};
  for (const std::string& name : from) {
    const auto& [spec, values] = src.take(name);
    t.values.insert(t.values.end(), values.begin(), values.end());
  }
  t.shape = {static_cast<std::int64_t>(t.values.size())};
  return t;
}

// Dense decoder layers as GPT-2 and Llama have them: no experts, latent attention, windows,
// QK or sandwich norms, sinks or MTP modules (the executor runs none of them either).
bool plain_decoder(const ModelSpec& m) {
  return !m.moe && !m.mla && m.sliding_window == 0 && !m.qk_norm && !m.sandwich_norm && !m.attention_sinks &&
         m.mtp_layers == 0 && !(m.qkv_bias && !m.bias);
}

bool gpt2_layout(const ModelSpec& m) {
  return plain_decoder(m) && m.norm == Norm::layernorm && m.activation == Activation::gelu &&
         m.position == Position::learned && m.bias && m.kv_heads == m.heads;
}

// What Llama, DeepSeekMoE and DeepSeek-V2 share: RMSNorm, SwiGLU, RoPE, no biases, and none
// of windows, QK or sandwich norms, sinks or MTP modules (the executor runs none of them).
bool llama_family(const ModelSpec& m) {
  return m.sliding_window == 0 && !m.qk_norm && !m.sandwich_norm && !m.attention_sinks && m.mtp_layers == 0 &&
         !m.qkv_bias && m.norm == Norm::rmsnorm && m.activation == Activation::swiglu &&
         m.position == Position::rope && !m.bias;
}

// DeepSeekMoE's experts as the executor runs them (moe_block.hpp): no router bias, gate or
// group-limited routing, the shared experts as wide as the routed ones (DeepSeek's config
// gives one width: n_shared_experts x moe_intermediate_size).
bool deepseek_experts(const MoeSpec& e) {
  return !e.router_bias && !e.shared_expert_gate && e.groups == 0 && e.shared_width() == e.expert_ffn_hidden;
}

bool llama_layout(const ModelSpec& m) { return llama_family(m) && !m.mla && !m.moe; }
bool deepseek_moe_layout(const ModelSpec& m) { return llama_family(m) && !m.mla && m.moe && deepseek_experts(*m.moe); }
// DeepSeek-V2: latent attention with DeepSeekMoE's experts (or a dense FFN), no V3 extras
bool deepseek_v2_layout(const ModelSpec& m) { return llama_family(m) && m.mla && (!m.moe || deepseek_experts(*m.moe)); }

std::vector<HfTensor> gpt2(const ModelSpec& m, Source& src) {
  std::vector<HfTensor> out;
  out.push_back(same(src, "embedding.word.weight", "transformer.wte.weight"));
  out.push_back(same(src, "embedding.position.weight", "transformer.wpe.weight"));
  for (std::int64_t l = 0; l < m.layers; ++l) {
    const std::string a = "layer" + std::to_string(l) + ".attn.", f = "layer" + std::to_string(l) + ".mlp.";
    const std::string h = "transformer.h." + std::to_string(l) + ".";
    out.push_back(same(src, a + "norm.weight", h + "ln_1.weight"));
    out.push_back(same(src, a + "norm.bias", h + "ln_1.bias"));
    out.push_back(conv1d(src, {a + "q.weight", a + "k.weight", a + "v.weight"}, h + "attn.c_attn.weight"));
    out.push_back(joined(src, {a + "q.bias", a + "k.bias", a + "v.bias"}, h + "attn.c_attn.bias"));
    out.push_back(conv1d(src, {a + "proj.weight"}, h + "attn.c_proj.weight"));
    out.push_back(same(src, a + "proj.bias", h + "attn.c_proj.bias"));
    out.push_back(same(src, f + "norm.weight", h + "ln_2.weight"));
    out.push_back(same(src, f + "norm.bias", h + "ln_2.bias"));
    out.push_back(conv1d(src, {f + "fc1.weight"}, h + "mlp.c_fc.weight"));
    out.push_back(same(src, f + "fc1.bias", h + "mlp.c_fc.bias"));
    out.push_back(conv1d(src, {f + "fc2.weight"}, h + "mlp.c_proj.weight"));
    out.push_back(same(src, f + "fc2.bias", h + "mlp.c_proj.bias"));
  }
  out.push_back(same(src, "head.norm.weight", "transformer.ln_f.weight"));
  out.push_back(same(src, "head.norm.bias", "transformer.ln_f.bias"));
  if (src.has("head.output.weight")) out.push_back(same(src, "head.output.weight", "lm_head.weight"));
  return out;
}

// A linear layer "<from>weight" as "<to>.weight", and its LoRA pair when the run trained one
// (training.lora) under PEFT's names "<to>.lora_A.weight", "<to>.lora_B.weight" (peft
// tuners/lora/layer.py: lora_A [r, in], lora_B [out, r], as the executor keeps them).
void linear(std::vector<HfTensor>& out, Source& src, const std::string& from, const std::string& to) {
  out.push_back(same(src, from + "weight", to + ".weight"));
  if (!src.has(from + "lora_a")) return;
  out.push_back(same(src, from + "lora_a", to + ".lora_A.weight"));
  out.push_back(same(src, from + "lora_b", to + ".lora_B.weight"));
}

// A SwiGLU FFN's three matrices: from "<f>gate.weight", ... to "<to>gate_proj.weight", ...
void swiglu_ffn(std::vector<HfTensor>& out, Source& src, const std::string& f, const std::string& to) {
  linear(out, src, f + "gate.", to + "gate_proj");
  linear(out, src, f + "up.", to + "up_proj");
  linear(out, src, f + "down.", to + "down_proj");
}

// Llama, and DeepSeekMoE (deepseek-ai/deepseek-moe-16b-base modeling_deepseek.py: "mlp.gate"
// the router [experts, h], "mlp.experts.<j>.gate_proj", "mlp.shared_experts.gate_proj"
// with the shared experts' summed width) on the same attention.
// The rows [offset, offset + rope) of every one of `groups` row groups (a head's Q rows, or
// the one RoPE key's), reordered from the executor's rotate_half pairs (i, rope/2 + i) to
// DeepSeek's interleaved pairs (2i, 2i + 1): modeling_deepseek.py's apply_rotary_pos_emb
// de-interleaves q_pe and k_pe before rotate_half, so these rows give the executor's
// rotation (in a permuted order that Q and K share, which leaves every score as it is).
HfTensor rope_rows_interleaved(HfTensor t, std::int64_t groups, std::int64_t offset, std::int64_t rope) {
  const std::int64_t rows_per_group = t.shape[0] / groups, cols = t.shape[1];
  const std::vector<float> from = t.values;
  for (std::int64_t g = 0; g < groups; ++g)
    for (std::int64_t i = 0; i < rope / 2; ++i)
      for (const auto& [to_row, from_row] : {std::pair{2 * i, i}, std::pair{2 * i + 1, rope / 2 + i}}) {
        const std::int64_t base = g * rows_per_group + offset;
        std::copy_n(from.begin() + (base + from_row) * cols, cols, t.values.begin() + (base + to_row) * cols);
      }
  return t;
}

// DeepSeek-V2's latent attention (deepseek-ai/DeepSeek-V2 modeling_deepseek.py
// DeepseekV2Attention): q_a_proj, q_a_layernorm, q_b_proj (or q_proj), kv_a_proj_with_mqa
// (the latent, then the RoPE key), kv_a_layernorm, kv_b_proj, o_proj.
void mla_attention(const ModelSpec& m, std::vector<HfTensor>& out, Source& src, const std::string& a,
                   const std::string& h) {
  const MlaSpec& mla = *m.mla;
  const std::int64_t nope = mla.qk_nope_head_dim, rope = mla.qk_rope_head_dim;
  if (mla.q_lora_rank > 0) {
    out.push_back(same(src, a + "q_down.weight", h + "self_attn.q_a_proj.weight"));
    out.push_back(same(src, a + "q_norm.weight", h + "self_attn.q_a_layernorm.weight"));
    out.push_back(rope_rows_interleaved(same(src, a + "q_up.weight", h + "self_attn.q_b_proj.weight"), m.heads, nope, rope));
  } else {
    out.push_back(rope_rows_interleaved(same(src, a + "q.weight", h + "self_attn.q_proj.weight"), m.heads, nope, rope));
  }
  out.push_back(rope_rows_interleaved(same(src, a + "kv_down.weight", h + "self_attn.kv_a_proj_with_mqa.weight"), 1,
                                      mla.kv_lora_rank, rope));
  out.push_back(same(src, a + "kv_norm.weight", h + "self_attn.kv_a_layernorm.weight"));
  out.push_back(same(src, a + "kv_up.weight", h + "self_attn.kv_b_proj.weight"));
}

std::vector<HfTensor> llama(const ModelSpec& m, Source& src) {
  std::vector<HfTensor> out;
  out.push_back(same(src, "embedding.word.weight", "model.embed_tokens.weight"));
  for (std::int64_t l = 0; l < m.layers; ++l) {
    const std::string a = "layer" + std::to_string(l) + ".attn.", f = "layer" + std::to_string(l) + ".mlp.";
    const std::string h = "model.layers." + std::to_string(l) + ".";
    out.push_back(same(src, a + "norm.weight", h + "input_layernorm.weight"));
    if (m.mla) {
      mla_attention(m, out, src, a, h);
    } else {
      linear(out, src, a + "q.", h + "self_attn.q_proj");
      linear(out, src, a + "k.", h + "self_attn.k_proj");
      linear(out, src, a + "v.", h + "self_attn.v_proj");
    }
    linear(out, src, a + "proj.", h + "self_attn.o_proj");
    out.push_back(same(src, f + "norm.weight", h + "post_attention_layernorm.weight"));
    if (!m.is_moe_layer(l)) {
      swiglu_ffn(out, src, f, h + "mlp.");
      continue;
    }
    out.push_back(same(src, f + "router.weight", h + "mlp.gate.weight"));
    for (int e = 0; e < m.moe->experts; ++e)
      swiglu_ffn(out, src, f + "experts." + std::to_string(e) + ".", h + "mlp.experts." + std::to_string(e) + ".");
    if (m.moe->shared_experts > 0) swiglu_ffn(out, src, f + "shared.", h + "mlp.shared_experts.");
  }
  out.push_back(same(src, "head.norm.weight", "model.norm.weight"));
  if (src.has("head.output.weight")) out.push_back(same(src, "head.output.weight", "lm_head.weight"));
  return out;
}

}  // namespace

std::vector<HfTensor> to_hf_names(const ModelSpec& model, const Params& params) {
  Source src(params);
  std::vector<HfTensor> out;
  if (gpt2_layout(model)) out = gpt2(model, src);
  else if (llama_layout(model) || deepseek_moe_layout(model) || deepseek_v2_layout(model)) out = llama(model, src);
  else
    throw std::invalid_argument("model " + model.name +
                                ": Hugging Face names cover the GPT-2 layout (layernorm, gelu, learned positions, "
                                "biases, no GQA), the Llama layout (rmsnorm, swiglu, rope, no biases), "
                                "DeepSeekMoE's (Llama's with experts) and DeepSeek-V2's (latent attention); use "
                                "--names twinsim");
  src.check_all_taken();
  return out;
}

namespace {

// A float setting as the decimal it was written as (1e-5f, not 9.999999747378752e-06): its
// shortest round-tripping text, read as a double.
double as_written(float x) {
  char text[32];
  const auto end = std::to_chars(text, text + sizeof text, x).ptr;
  return std::stod(std::string(text, end));
}


// The keys LlamaConfig and DeepSeek's configs share, with the executor's numerics.
nlohmann::json llama_config_keys(const ModelSpec& m, const std::string& torch_dtype) {
  const TransformerConfig numerics;  // the executor's eps and theta, whatever the plan
  return {{"num_hidden_layers", m.layers}, {"hidden_size", m.hidden}, {"num_attention_heads", m.heads},
          {"num_key_value_heads", m.kv_heads}, {"intermediate_size", m.ffn_hidden}, {"vocab_size", m.vocab},
          {"max_position_embeddings", m.max_seq_len}, {"hidden_act", "silu"},
          {"rms_norm_eps", as_written(numerics.norm_eps)}, {"rope_theta", as_written(numerics.rope_theta)},
          {"tie_word_embeddings", m.tied_embeddings}, {"attention_bias", false}, {"torch_dtype", torch_dtype}};
}

// DeepSeekMoE's expert keys (DeepSeek-V2 reads the same), as the executor's router runs them.
void add_deepseek_expert_keys(nlohmann::json& c, const MoeSpec& e) {
  c["n_routed_experts"] = e.experts;
  c["num_experts_per_tok"] = e.top_k;
  c["moe_intermediate_size"] = e.expert_ffn_hidden;
  c["n_shared_experts"] = e.shared_experts;
  c["first_k_dense_replace"] = e.dense_layers;
  c["moe_layer_freq"] = 1;
  c["scoring_func"] = "softmax";  // the executor's router (moe_block.hpp)
  c["norm_topk_prob"] = false;    // the top_k probabilities weight their experts as they are
}

}  // namespace

nlohmann::json hf_config(const ModelSpec& m, Dtype dtype) {
  const TransformerConfig numerics;  // the executor's eps, whatever the plan
  const std::string torch_dtype = dtype == Dtype::bf16 ? "bfloat16" : dtype == Dtype::fp16 ? "float16" : "float32";
  if (gpt2_layout(m))  // transformers/models/gpt2/configuration_gpt2.py
    return {{"architectures", {"GPT2LMHeadModel"}}, {"model_type", "gpt2"}, {"n_layer", m.layers},
            {"n_embd", m.hidden}, {"n_head", m.heads}, {"n_inner", m.ffn_hidden}, {"vocab_size", m.vocab},
            {"n_positions", m.max_seq_len}, {"activation_function", "gelu_new"},
            {"layer_norm_epsilon", as_written(numerics.norm_eps)}, {"tie_word_embeddings", m.tied_embeddings},
            {"resid_pdrop", 0.0}, {"embd_pdrop", 0.0}, {"attn_pdrop", 0.0}, {"torch_dtype", torch_dtype}};
  nlohmann::json c = llama_config_keys(m, torch_dtype);
  if (llama_layout(m)) {  // transformers/models/llama/configuration_llama.py
    c["architectures"] = {"LlamaForCausalLM"};
    c["model_type"] = "llama";
    c["mlp_bias"] = false;
    return c;
  }
  if (deepseek_v2_layout(m)) {  // deepseek-ai/DeepSeek-V2 configuration_deepseek.py
    const MlaSpec& a = *m.mla;
    c["architectures"] = {"DeepseekV2ForCausalLM"};
    c["model_type"] = "deepseek_v2";
    c["q_lora_rank"] = a.q_lora_rank > 0 ? nlohmann::json(a.q_lora_rank) : nlohmann::json(nullptr);  // V2-Lite: null
    c["kv_lora_rank"] = a.kv_lora_rank;
    c["qk_nope_head_dim"] = a.qk_nope_head_dim;
    c["qk_rope_head_dim"] = a.qk_rope_head_dim;
    c["v_head_dim"] = a.v_head_dim;
    if (m.moe) {
      add_deepseek_expert_keys(c, *m.moe);
      c["topk_method"] = "greedy";
      c["routed_scaling_factor"] = 1.0;  // the routed experts' sum as it is
    }
    return c;
  }
  if (deepseek_moe_layout(m)) {  // deepseek-ai/deepseek-moe-16b-base configuration_deepseek.py
    c["architectures"] = {"DeepseekForCausalLM"};
    c["model_type"] = "deepseek";
    add_deepseek_expert_keys(c, *m.moe);
    return c;
  }
  throw std::invalid_argument("model " + m.name +
                              ": a Hugging Face config covers the GPT-2, Llama, DeepSeekMoE and DeepSeek-V2 layouts only");
}

}  // namespace twinsim::exec
