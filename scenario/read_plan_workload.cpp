// The `plan:`, `training:` and `inference:` sections (SCENARIO.md).
#include <algorithm>

#include "models/plan_fields.hpp"
#include "scenario/errors.hpp"
#include "scenario/mapping_reader.hpp"
#include "scenario/read_sections.hpp"
#include "scenario/suggest.hpp"

namespace twinsim {

namespace {

constexpr std::int64_t kMaxTokens = std::int64_t{1} << 40;

Dtype read_dtype(MappingReader& r, const std::string& key, const std::string& fallback,
                 const std::vector<std::string>& allowed) {
  Dtype d = Dtype::bf16;
  parse_dtype(r.choice(key, fallback, allowed), d);
  return d;
}


// `inference.disaggregation` (SCENARIO.md): the two pools and the link between them.
Disaggregation read_disaggregation(const YAML::Node& node, const std::string& path) {
  MappingReader r(node, path);
  Disaggregation d;
  d.prefill_replicas = static_cast<int>(r.integer("prefill_replicas", 1, 1, 4096));
  d.prefill_tp = static_cast<int>(r.integer("prefill_tp", 0, 1, 1024));
  d.decode_replicas = static_cast<int>(r.integer("decode_replicas", 1, 1, 4096));
  d.kv_over_nvlink = r.choice("kv_link", "inter_node", {"inter_node", "intra_node"}) == "intra_node";
  r.reject_unknown();
  return d;
}

// One `plan` knob (models/plan_fields.hpp) from its key, or its fallback.
void read_knob(MappingReader& r, const IntKnob& k, Plan& p) {
  p.*k.member = static_cast<int>(r.integer(std::string(k.key), k.fallback, k.min, k.max));
}
void read_knob(MappingReader& r, const BoolKnob& k, Plan& p) { p.*k.member = r.boolean(std::string(k.key), k.fallback); }
void read_knob(MappingReader& r, const RatioKnob& k, Plan& p) {
  p.*k.member = r.number(std::string(k.key), k.fallback, k.min, k.max);
}
void read_knob(MappingReader& r, const ModuleSetKnob& k, Plan& p) {
  const std::string key = r.key_path(std::string(k.key));
  std::vector<std::string> names;
  std::string choices;
  for (RecomputeModule m : kRecomputeModules) {
    names.emplace_back(to_string(m));
    choices += (choices.empty() ? "" : " | ") + names.back();
  }
  const YAML::Node list = r.child(std::string(k.key));
  if (!list.IsDefined() || list.IsNull()) return;
  if (!list.IsSequence()) throw ScenarioError(key, "", "must be a list of " + choices);
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string item = key + "[" + std::to_string(i) + "]";
    const std::string name = list[i].IsScalar() ? list[i].Scalar() : "";
    const auto at = std::find(names.begin(), names.end(), name);
    if (at == names.end()) throw ScenarioError(item, name, "is not one of " + choices + did_you_mean(name, names));
    p.*k.member |= 1u << static_cast<int>(kRecomputeModules[at - names.begin()]);
  }
}
void read_knob(MappingReader& r, const LayerListKnob& k, Plan& p) {
  for (std::int64_t n : r.integer_list(std::string(k.key), k.min, k.max)) (p.*k.member).push_back(static_cast<int>(n));
}
template <class E>
void read_knob(MappingReader& r, const ChoiceKnob<E>& k, Plan& p) {
  std::vector<std::string> names;
  for (int i = 0; i < k.count; ++i) names.emplace_back(to_string(k.values[i]));
  const std::string name = r.choice(std::string(k.key), std::string(to_string(k.fallback)), names);
  for (int i = 0; i < k.count; ++i)
    if (names[i] == name) p.*k.member = k.values[i];
}

}  // namespace

// `inference.speculative` (SCENARIO.md): how many tokens are proposed, how often each is
// accepted, and by what; a draft model is read as `model:` is (catalog name or mapping).
SpeculativeDecoding read_speculative(const YAML::Node& node, const std::string& path) {
  MappingReader r(node, path);
  SpeculativeDecoding d;
  d.method = r.choice("method", "ngram", {"ngram", "draft"}) == "draft" ? SpeculativeMethod::draft
                                                                      : SpeculativeMethod::ngram;
  d.tokens = static_cast<int>(r.required_integer("tokens", 1, 16));
  const std::optional<double> alpha = r.optional_number("acceptance_rate", 0, 1);
  if (!alpha) throw ScenarioError(r.key_path("acceptance_rate"), "", "is required (0 to 1: each proposed token's chance)");
  d.acceptance_rate = *alpha;
  if (r.has("draft_model")) {
    if (d.method != SpeculativeMethod::draft)
      throw ScenarioError(r.key_path("draft_model"), "", "needs " + r.key_path("method") + "=draft");
    d.draft_model = read_model(r.child("draft_model"), r.key_path("draft_model"));
  } else if (d.method == SpeculativeMethod::draft) {
    throw ScenarioError(r.key_path("draft_model"), "", "is required with " + r.key_path("method") + "=draft");
  }
  r.reject_unknown();
  return d;
}

Plan read_plan(const YAML::Node& node, const std::string& path) {
  if (!node.IsDefined() || node.IsNull()) throw ScenarioError(path, "", "is required");
  MappingReader r(node, path);
  Plan p;
  for_each_plan_knob([&](const auto& knob) { read_knob(r, knob, p); });
  if (r.has("gradient_topk_ratio") && p.gradient_compression != GradCompression::topk)
    throw ScenarioError(r.key_path("gradient_topk_ratio"), "", "needs plan.gradient_compression=topk");
  if (r.has("gradient_powersgd_rank") && p.gradient_compression != GradCompression::powersgd)
    throw ScenarioError(r.key_path("gradient_powersgd_rank"), "", "needs plan.gradient_compression=powersgd");
  r.reject_unknown();
  return p;
}

// `optimizer: {name, lr, beta1, beta2, eps, weight_decay, grad_clip, schedule: {warmup_steps,
// decay: constant|linear|cosine, decay_steps, min_lr}}`.
void read_optimizer(MappingReader& parent, TrainingWorkload& t) {
  MappingReader r(parent.child("optimizer"), parent.key_path("optimizer"));
  parse_optimizer(r.choice("name", "adam", {"adam", "adamw", "sgd"}) == "sgd" ? "sgd" : "adam", t.optimizer);
  OptimizerSettings& o = t.optim;
  o.lr = r.number("lr", o.lr, 0, 1e3);
  o.beta1 = r.number("beta1", o.beta1, 0, 0.999999);
  o.beta2 = r.number("beta2", o.beta2, 0, 0.999999999);
  o.eps = r.number("eps", o.eps, 0, 1);
  o.weight_decay = r.number("weight_decay", o.weight_decay, 0, 10);
  o.grad_clip = r.number("grad_clip", 0, 0, 1e9);
  if (r.has("schedule")) {
    MappingReader s(r.child("schedule"), r.key_path("schedule"));
    o.warmup_steps = static_cast<int>(s.integer("warmup_steps", 0, 0, 1 << 30));
    const std::string decay = s.choice("decay", "constant", {"constant", "linear", "cosine"});
    o.decay = decay == "linear" ? LrDecay::linear : decay == "cosine" ? LrDecay::cosine : LrDecay::constant;
    o.decay_steps = static_cast<int>(s.integer("decay_steps", 0, 0, 1 << 30));
    o.min_lr = s.number("min_lr", 0, 0, 1e3);
    s.reject_unknown();
    if (o.decay != LrDecay::constant && o.decay_steps == 0)
      throw ScenarioError(s.key_path("decay_steps"), "", "is required with decay: " + decay);
    if (o.min_lr > o.lr)
      throw ScenarioError(s.key_path("min_lr"), std::to_string(o.min_lr), "exceeds " + r.key_path("lr"));
  }
  r.reject_unknown();
}

namespace {

// `lora: {rank, alpha, target_modules, base_dtype}` (SCENARIO.md): PEFT's LoraConfig keys.
// target_modules: a list of q, k, v, o, gate, up, down (PEFT's q_proj ... down_proj), or
// all_linear (every one the model has; PEFT's "all-linear").
LoraSpec read_lora(MappingReader& parent, const Dtype precision) {
  MappingReader r(parent.child("lora"), parent.key_path("lora"));
  LoraSpec l;
  l.rank = static_cast<int>(r.integer("rank", 8, 1, 1 << 16));
  l.alpha = r.number("alpha", 2.0 * l.rank, 1e-6, 1e9);
  std::vector<std::string> bases;
  for (LoraBase b : {LoraBase::bf16, LoraBase::fp16, LoraBase::fp8, LoraBase::int4, LoraBase::nf4})
    bases.emplace_back(to_string(b));
  const std::string fallback = precision == Dtype::fp16 ? "fp16" : "bf16";
  const std::string base = r.choice("base_dtype", fallback, bases);
  for (LoraBase b : {LoraBase::bf16, LoraBase::fp16, LoraBase::fp8, LoraBase::int4, LoraBase::nf4})
    if (to_string(b) == base) l.base = b;
  std::vector<std::string> names;
  for (LoraModule m : kLoraModules) names.emplace_back(to_string(m));
  const std::string key = r.key_path("target_modules");
  const YAML::Node list = r.child("target_modules");
  if (!list.IsDefined() || list.IsNull() || (list.IsScalar() && list.Scalar() == "all_linear")) {
    for (LoraModule m : kLoraModules) l.modules |= 1u << static_cast<int>(m);
  } else if (!list.IsSequence()) {
    throw ScenarioError(key, list.IsScalar() ? list.Scalar() : "", "must be all_linear or a list of q | k | v | o | gate | up | down");
  } else {
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::string name = list[i].IsScalar() ? list[i].Scalar() : "";
      const auto at = std::find(names.begin(), names.end(), name);
      if (at == names.end())
        throw ScenarioError(key + "[" + std::to_string(i) + "]", name,
                            "is not one of q | k | v | o | gate | up | down" + did_you_mean(name, names));
      l.modules |= 1u << static_cast<int>(kLoraModules[at - names.begin()]);
    }
  }
  r.reject_unknown();
  return l;
}

}  // namespace

TrainingWorkload read_training(const YAML::Node& node, const std::string& path) {
  MappingReader r(node, path);
  TrainingWorkload t;
  t.seq_len = r.required_integer("seq_len", 1, kMaxTokens);
  t.global_batch = r.required_integer("global_batch", 1, kMaxTokens);
  t.micro_batch = r.integer("micro_batch", 1, 1, kMaxTokens);
  t.precision = read_dtype(r, "precision", "bf16", {"fp32", "fp16", "bf16", "fp8", "nvfp4", "mxfp4"});
  if (r.child("optimizer").IsMap())
    read_optimizer(r, t);
  else  // "adamw" names what "adam" always ran
    parse_optimizer(r.choice("optimizer", "adam", {"adam", "adamw", "sgd"}) == "sgd" ? "sgd" : "adam", t.optimizer);
  if (r.has("data")) {
    MappingReader d(r.child("data"), r.key_path("data"));
    t.data.path = d.string("path", "");
    if (t.data.path.empty()) throw ScenarioError(d.key_path("path"), "", "is required (a flat file of token ids)");
    t.data.token_bytes = d.choice("dtype", "uint16", {"uint16", "uint32"}) == "uint16" ? 2 : 4;
    d.reject_unknown();
  }
  if (r.has("lora")) t.lora = read_lora(r, t.precision);
  r.reject_unknown();
  return t;
}

InferenceWorkload read_inference(const YAML::Node& node, const std::string& path) {
  MappingReader r(node, path);
  InferenceWorkload w;
  w.prompt_len = r.required_integer("prompt_len", 1, kMaxTokens);
  w.output_len = r.integer("output_len", 128, 1, kMaxTokens);
  w.batch = r.integer("batch", 1, 1, kMaxTokens);
  w.prefix_tokens = r.integer("prefix_tokens", 0, 0, kMaxTokens);
  const std::vector<std::string> dtypes{"fp32", "fp16", "bf16", "fp8", "int8", "int4", "nvfp4", "mxfp4"};
  w.weight_dtype = read_dtype(r, "weight_dtype", "bf16", dtypes);
  if (r.has("expert_weight_dtype")) w.expert_weight_dtype = read_dtype(r, "expert_weight_dtype", "bf16", dtypes);
  w.kv_dtype = read_dtype(r, "kv_dtype", "bf16", {"fp32", "fp16", "bf16", "fp8", "int8", "int4"});
  w.fp8_block_scales = r.choice("fp8_scaling", "tensor", {"tensor", "block"}) == "block";
  if (r.has("speculative")) w.speculative = read_speculative(r.child("speculative"), r.key_path("speculative"));
  if (r.has("disaggregation"))
    w.disaggregation = read_disaggregation(r.child("disaggregation"), r.key_path("disaggregation"));
  r.reject_unknown();
  return w;
}

}  // namespace twinsim
