// The `plan:`, `training:` and `inference:` sections (SCENARIO.md).
#include "scenario/errors.hpp"
#include "scenario/mapping_reader.hpp"
#include "scenario/read_sections.hpp"

namespace twinsim {

namespace {

constexpr std::int64_t kMaxDegree = 1 << 24;
constexpr std::int64_t kMaxTokens = std::int64_t{1} << 40;

Dtype read_dtype(MappingReader& r, const std::string& key, const std::string& fallback,
                 const std::vector<std::string>& allowed) {
  Dtype d = Dtype::bf16;
  parse_dtype(r.choice(key, fallback, allowed), d);
  return d;
}

}  // namespace

Plan read_plan(const YAML::Node& node, const std::string& path) {
  if (!node.IsDefined() || node.IsNull()) throw ScenarioError(path, "", "is required");
  MappingReader r(node, path);
  Plan p;
  p.tp = static_cast<int>(r.integer("tp", 1, 1, kMaxDegree));
  p.pp = static_cast<int>(r.integer("pp", 1, 1, kMaxDegree));
  p.dp = static_cast<int>(r.integer("dp", 0, 1, kMaxDegree));  // 0: the rest of the GPUs
  p.cp = static_cast<int>(r.integer("cp", 1, 1, kMaxDegree));
  p.ep = static_cast<int>(r.integer("ep", 1, 1, kMaxDegree));
  p.sequence_parallel = r.boolean("sequence_parallel", false);
  p.zero = static_cast<int>(r.integer("zero", 0, 0, 3));
  parse_recompute(r.choice("recompute", "none", {"none", "selective", "full"}), p.recompute);
  parse_schedule(r.choice("schedule", "1f1b", {"gpipe", "1f1b", "interleaved"}), p.schedule);
  p.virtual_stages = static_cast<int>(r.integer("virtual_stages", 1, 1, 1 << 16));
  // a stage's layer count is an int: a larger entry is refused, not truncated
  for (std::int64_t n : r.integer_list("stage_layers", 1, 1 << 20)) p.stage_layers.push_back(static_cast<int>(n));
  p.overlap_grad_reduce = r.boolean("overlap_grad_reduce", true);
  p.overlap_param_gather = r.boolean("overlap_param_gather", true);
  p.tp_comm_overlap = r.boolean("tp_comm_overlap", false);
  p.flash_attention = r.boolean("flash_attention", true);
  p.offload_optimizer = r.boolean("offload_optimizer", false);
  r.reject_unknown();
  return p;
}

TrainingWorkload read_training(const YAML::Node& node, const std::string& path) {
  MappingReader r(node, path);
  TrainingWorkload t;
  t.seq_len = r.required_integer("seq_len", 1, kMaxTokens);
  t.global_batch = r.required_integer("global_batch", 1, kMaxTokens);
  t.micro_batch = r.integer("micro_batch", 1, 1, kMaxTokens);
  t.precision = read_dtype(r, "precision", "bf16", {"fp32", "fp16", "bf16", "fp8"});
  parse_optimizer(r.choice("optimizer", "adam", {"adam", "sgd"}), t.optimizer);
  if (r.has("data")) {
    MappingReader d(r.child("data"), r.key_path("data"));
    t.data.path = d.string("path", "");
    if (t.data.path.empty()) throw ScenarioError(d.key_path("path"), "", "is required (a flat file of token ids)");
    t.data.token_bytes = d.choice("dtype", "uint16", {"uint16", "uint32"}) == "uint16" ? 2 : 4;
    d.reject_unknown();
  }
  r.reject_unknown();
  return t;
}

InferenceWorkload read_inference(const YAML::Node& node, const std::string& path) {
  MappingReader r(node, path);
  InferenceWorkload w;
  w.prompt_len = r.required_integer("prompt_len", 1, kMaxTokens);
  w.output_len = r.integer("output_len", 128, 1, kMaxTokens);
  w.batch = r.integer("batch", 1, 1, kMaxTokens);
  const std::vector<std::string> dtypes{"fp32", "fp16", "bf16", "fp8", "int8", "int4"};
  w.weight_dtype = read_dtype(r, "weight_dtype", "bf16", dtypes);
  w.kv_dtype = read_dtype(r, "kv_dtype", "bf16", {"fp32", "fp16", "bf16", "fp8", "int8", "int4"});
  r.reject_unknown();
  return w;
}

}  // namespace twinsim
