#include "exec/train/run_report.hpp"

#include <algorithm>
#include <string>

#include "exec/model/tensor.hpp"
#include "models/head_ops.hpp"
#include "models/report_schema.hpp"
#include "models/layer_ops.hpp"

namespace twinsim::exec {

namespace {

using nlohmann::json;

json category_json(const CategoryBytes& bytes) {
  json j = json::object();
  for (MemCategory c : kMemCategories) j[std::string(category_name(c))] = bytes[static_cast<std::size_t>(c)];
  return j;
}

// Parameters this rank holds that no other rank of the count holds: TP shards once each,
// replicated ones on TP rank 0, one DP replica, and not the last stage's tied copy.
std::int64_t unique_params(TransformerStage& stage, const RankCoords& coords) {
  if (coords.dp != 0) return 0;
  std::int64_t n = 0;
  for (ParamBlock* b : stage.blocks())
    for (const ParamSlot& s : b->slots())
      if (counted_once(*b, s, stage.config().model.tied_embeddings, coords.tp)) n += static_cast<std::int64_t>(s.count);
  return n;
}

// What this rank measured, as JSON text for gather_bytes.
std::string rank_record(TransformerStage& stage, ProcessGroups& groups, const TrackedAllocator& allocator) {
  const MemoryStats& m = allocator.stats();
  json j{{"rank", groups.world_rank()},
         {"stage", groups.coords().pp},
         {"params", unique_params(stage, groups.coords())},
         {"peak_bytes", m.total_peak},
         {"breakdown", category_json(m.at_total_peak)},
         {"category_peaks", category_json(m.peak)},
         // ZeRO-Offload's host memory (exec/model/tensor.hpp host_allocator), apart from the GPU's
         {"host_bytes", host_allocator().stats().total_peak},
         {"host_breakdown", category_json(host_allocator().stats().at_total_peak)}};
  return j.dump();
}

// Model FLOPs of one step (forward + backward, no recompute; Korthikanti et al. 2022,
// App. A) and the recomputed forward FLOPs, from the simulator-independent op list.
std::pair<double, double> step_flops(const TrainConfig& c) {
  Plan plan;  // one GPU holding the whole model
  plan.recompute = c.plan.recompute;
  plan.flash_attention = c.plan.flash_attention;
  const MicroBatchShape shape{c.training.global_batch, c.training.seq_len, c.training.precision};
  double model = 0, recompute = 0;
  for (std::int64_t l = 0; l < c.model.layers; ++l) {
    const std::vector<LayerOp> ops = build_layer_ops(c.model, l, plan, shape);
    model += forward_flops(ops) + backward_flops(ops);
    for (const LayerOp& op : ops)
      if (op.recomputed) recompute += op.fwd_flops;
  }
  for (const LayerOp& op : build_head_ops(c.model, plan, shape)) model += op.fwd_flops + op.dgrad_flops + op.wgrad_flops;
  return {model, recompute};
}

json memory_json(const std::vector<json>& ranks, const GpuSpec& gpu) {
  const json* worst = &ranks.front();
  std::map<int, const json*> stage_worst;
  json per_rank = json::array();
  for (const json& r : ranks) {
    if (r["peak_bytes"].get<std::int64_t>() > (*worst)["peak_bytes"].get<std::int64_t>()) worst = &r;
    const int s = r["stage"].get<int>();
    if (!stage_worst.count(s) || r["peak_bytes"].get<std::int64_t>() > (*stage_worst[s])["peak_bytes"].get<std::int64_t>())
      stage_worst[s] = &r;
    per_rank.push_back({{"rank", r["rank"]}, {"stage", s}, {"peak_bytes", r["peak_bytes"]},
                        {"category_peaks", r["category_peaks"]}});
  }
  json stages = json::array();
  for (const auto& [s, r] : stage_worst)
    stages.push_back({{"stage", s}, {"peak_bytes", (*r)["peak_bytes"]}, {"breakdown", (*r)["breakdown"]}});
  const std::int64_t peak = (*worst)["peak_bytes"].get<std::int64_t>();
  const json* host = &ranks.front();
  for (const json& r : ranks)
    if (r["host_bytes"].get<std::int64_t>() > (*host)["host_bytes"].get<std::int64_t>()) host = &r;
  return {{"capacity_bytes", gpu.memory_bytes},
          {"host_bytes", (*host)["host_bytes"]},
          {"host_breakdown", (*host)["host_breakdown"]},
          {"peak_bytes", peak},
          {"fits", gpu.memory_bytes <= 0 || peak <= gpu.memory_bytes},
          {"breakdown", (*worst)["breakdown"]},
          {"stages", stages},
          {"per_rank", per_rank}};
}

}  // namespace

double median_step_seconds(const RunRecord& record) {
  std::vector<double> t;
  for (std::size_t i = 0; i < record.steps.size(); ++i)
    if (static_cast<int>(i) >= record.warmup_steps || record.steps.size() <= static_cast<std::size_t>(record.warmup_steps))
      t.push_back(record.steps[i].seconds);
  if (t.empty()) return 0;
  std::sort(t.begin(), t.end());
  const std::size_t n = t.size();
  return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

json measured_params_and_memory(TransformerStage& stage, ProcessGroups& groups, const TrackedAllocator& allocator,
                                const GpuSpec& gpu) {
  const std::vector<std::string> texts = groups.world().gather_bytes(rank_record(stage, groups, allocator), 0);
  if (groups.world_rank() != 0) return nullptr;
  std::vector<json> ranks;
  std::int64_t params = 0;
  for (const std::string& t : texts) {
    ranks.push_back(json::parse(t));
    params += ranks.back()["params"].get<std::int64_t>();
  }
  return {{"params", {{"total", params}, {"active", params}}}, {"memory", memory_json(ranks, gpu)}};
}

json measured_report(const TrainConfig& config, const GpuSpec& gpu, ProcessGroups& groups, Trainer& trainer,
                     const TrackedAllocator& allocator, const Profiler& profiler, const RunRecord& record) {
  const json measured = measured_params_and_memory(trainer.stage(), groups, allocator, gpu);
  const json ops = profiler.gather_summary(groups.world());
  if (groups.world_rank() != 0) return nullptr;
  const int world = groups.dims().world_size();
  const double step_s = median_step_seconds(record);
  const double tokens = static_cast<double>(config.training.global_batch * config.training.seq_len);
  const auto [model_flops, recompute_flops] = step_flops(config);
  const Dtype precision = config.training.precision;
  const double peak = gpu.peak_flops.count(precision) ? gpu.peak(precision) : 0;
  const double model_tflops = step_s > 0 ? model_flops / step_s / world / 1e12 : 0;
  const double hardware_tflops = step_s > 0 ? (model_flops + recompute_flops) / step_s / world / 1e12 : 0;
  json losses = json::array(), steps_s = json::array(), grad_norms = json::array();
  int skipped = 0;
  for (const StepResult& s : record.steps) {
    losses.push_back(s.loss);
    grad_norms.push_back(s.grad_norm);
    steps_s.push_back(s.seconds);
    skipped += s.skipped;
  }
  const int measured_steps = std::max<int>(1, static_cast<int>(record.steps.size()) - record.warmup_steps);
  json op_times = json::object();
  for (const auto& [name, op] : ops["ops"].items())
    op_times[name] = {{"count_per_step", op["count"].get<double>() / op["ranks"].get<double>() / measured_steps},
                      {"mean_s_per_step", op["mean_total_s"].get<double>() / measured_steps},
                      {"max_s_per_step", op["max_total_s"].get<double>() / measured_steps}};
  json report = {{kSchemaVersionKey, kReportSchemaVersion},
          {"source", "measured"},
          {"params", measured["params"]},
          {"memory", measured["memory"]},
          {"time", {{"step_s", step_s}, {"steps_s", steps_s}, {"warmup_steps", record.warmup_steps}}},
          {"throughput",
           {{"tokens_per_s", step_s > 0 ? tokens / step_s : 0},
            {"tokens_per_s_per_gpu", step_s > 0 ? tokens / step_s / world : 0},
            {"model_tflops_per_gpu", model_tflops},
            {"hardware_tflops_per_gpu", hardware_tflops},
            {"mfu", peak > 0 ? model_tflops * 1e12 / peak : 0},
            {"hfu", peak > 0 ? hardware_tflops * 1e12 / peak : 0}}},
          {"losses", losses},
          {"skipped_steps", skipped},
          {"ops", op_times},
          // params, grads and activations are stored in the training precision (fp32, or
          // 16-bit for bf16 / fp16 with fp32 masters and fp32 math inside the kernels)
          {"storage_bytes_per_element", precision == Dtype::fp32 ? 4 : 2}};
  if (config.training.optim.grad_clip > 0) report["grad_norms"] = grad_norms;  // before clipping, per step
  return report;
}

}  // namespace twinsim::exec
