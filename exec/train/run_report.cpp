#include "exec/train/run_report.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>

#include "exec/model/tensor.hpp"
#include "exec/runtime/backend.hpp"
#include "exec/runtime/swap_file.hpp"
#include "models/head_ops.hpp"
#include "models/report_memory.hpp"
#include "models/report_ops.hpp"
#include "models/report_throughput.hpp"
#include "models/report_time.hpp"
#include "models/report_schema.hpp"
#include "models/layer_ops.hpp"

namespace twinsim::exec {

namespace {

using nlohmann::json;

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

// What this rank measured, as JSON text for gather_bytes (category arrays in MemCategory's
// order; rank 0 reads them back in read_rank_record).
std::string rank_record(TransformerStage& stage, ProcessGroups& groups, const Allocator& allocator) {
  const MemoryStats& m = allocator.stats();
  json j{{"rank", groups.world_rank()},
         {"stage", groups.coords().pp},
         {"params", unique_params(stage, groups.coords())},
         {"peak_bytes", m.total_peak},
         {"breakdown", m.at_total_peak},
         {"category_peaks", m.peak},
         // ZeRO-Offload's host memory (exec/model/tensor.hpp host_allocator), apart from the GPU's
         {"host_bytes", host_allocator().stats().total_peak},
         {"host_breakdown", host_allocator().stats().at_total_peak},
         // plan.offload_device: nvme: the optimizer's states in the rank's swap file
         {"nvme_bytes", swap_file_peak_bytes()}};
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

// One rank's record, read back on rank 0.
struct RankMemory {
  RankPeak peak;
  CategoryBytes breakdown{};  // at its peak
  std::int64_t host_bytes = 0;
  CategoryBytes host_breakdown{};
  std::int64_t nvme_bytes = 0;
};

RankMemory read_rank_record(const json& r) {
  RankMemory m;
  m.peak = {r["rank"].get<int>(), r["stage"].get<int>(), r["peak_bytes"].get<std::int64_t>(),
            r["category_peaks"].get<CategoryBytes>()};
  m.breakdown = r["breakdown"].get<CategoryBytes>();
  m.host_bytes = r["host_bytes"].get<std::int64_t>();
  m.host_breakdown = r["host_breakdown"].get<CategoryBytes>();
  m.nvme_bytes = r["nvme_bytes"].get<std::int64_t>();
  return m;
}

// The worst rank's memory, each stage's worst, every rank's peak, and the most host memory
// one rank took, as the report's memory section (models/report_memory.hpp).
MemorySection memory_section(const std::vector<RankMemory>& ranks, const GpuSpec& gpu) {
  const RankMemory* worst = &ranks.front();
  const RankMemory* host = &ranks.front();
  std::map<int, const RankMemory*> stage_worst;
  MemorySection m;
  for (const RankMemory& r : ranks) {
    if (r.peak.peak_bytes > worst->peak.peak_bytes) worst = &r;
    if (r.host_bytes > host->host_bytes) host = &r;
    const auto [it, added] = stage_worst.emplace(r.peak.stage, &r);
    if (!added && r.peak.peak_bytes > it->second->peak.peak_bytes) it->second = &r;
    m.per_rank.push_back(r.peak);
  }
  for (const auto& [s, r] : stage_worst) m.stages.push_back({s, r->peak.peak_bytes, r->breakdown, std::nullopt});
  m.capacity_bytes = gpu.memory_bytes;
  m.peak_bytes = worst->peak.peak_bytes;
  m.fits = gpu.memory_bytes <= 0 || m.peak_bytes <= gpu.memory_bytes;
  m.breakdown = worst->breakdown;
  m.host_bytes = host->host_bytes;
  m.host_breakdown = host->host_breakdown;
  std::int64_t nvme = 0;  // the swap files hold optimizer states only
  for (const RankMemory& r : ranks) nvme = std::max(nvme, r.nvme_bytes);
  if (nvme > 0) {
    m.nvme_bytes = nvme;
    m.nvme_breakdown = CategoryBytes{};
    (*m.nvme_breakdown)[static_cast<std::size_t>(MemCategory::optimizer)] = nvme;
  }
  return m;
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

json measured_params_and_memory(TransformerStage& stage, ProcessGroups& groups, const Allocator& allocator,
                                const GpuSpec& gpu) {
  const std::vector<std::string> texts = groups.world().gather_bytes(rank_record(stage, groups, allocator), 0);
  if (groups.world_rank() != 0) return nullptr;
  std::vector<RankMemory> ranks;
  std::int64_t params = 0;
  for (const std::string& t : texts) {
    const json record = json::parse(t);
    ranks.push_back(read_rank_record(record));
    params += record["params"].get<std::int64_t>();
  }
  return {{"params", {{"total", params}, {"active", params}}}, {"memory", to_json(memory_section(ranks, gpu))}};
}

json measured_report(const TrainConfig& config, const GpuSpec& gpu, ProcessGroups& groups, Trainer& trainer,
                     const Allocator& allocator, const Profiler& profiler, const RunRecord& record) {
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
  json losses = json::array(), grad_norms = json::array();
  TimeSection time;  // the measured side of the contract (models/report_time.hpp)
  int skipped = 0;
  for (const StepResult& s : record.steps) {
    losses.push_back(s.loss);
    grad_norms.push_back(s.grad_norm);
    time.steps_s.push_back(s.seconds);
    skipped += s.skipped;
  }
  const int measured_steps = std::max<int>(1, static_cast<int>(record.steps.size()) - record.warmup_steps);
  MeasuredOps op_times;
  for (const auto& [name, op] : ops["ops"].items())
    op_times[name] = {op["count"].get<double>() / op["ranks"].get<double>() / measured_steps,
                      op["mean_total_s"].get<double>() / measured_steps, op["max_total_s"].get<double>() / measured_steps};
  json report = {{kSchemaVersionKey, kReportSchemaVersion},
          {"source", "measured"},
          {"params", measured["params"]},
          {"memory", measured["memory"]},
          {"throughput", to_json(Throughput{step_s > 0 ? tokens / step_s : 0, step_s > 0 ? tokens / step_s / world : 0,
                                            model_tflops, hardware_tflops, peak > 0 ? model_tflops * 1e12 / peak : 0,
                                            peak > 0 ? hardware_tflops * 1e12 / peak : 0})},
          {"losses", losses},
          {"skipped_steps", skipped},
          {"ops", to_json(op_times, OpUnit::step)},
          // params, grads and activations are stored in the training precision (fp32, or
          // 16-bit for bf16 / fp16 with fp32 masters and fp32 math inside the kernels)
          {"storage_bytes_per_element", precision == Dtype::fp32 ? 4 : 2},
          // the backend the run's kernels ran on: cpu, cpu-strict or cuda (exec/runtime/backend.hpp)
          {"device", std::string(current_backend().name())}};
  time.step_s = step_s;
  time.warmup_steps = record.warmup_steps;
  write_time_section(report["time"], time);
  if (config.training.optim.grad_clip > 0) report["grad_norms"] = grad_norms;  // before clipping, per step
  return report;
}

}  // namespace twinsim::exec
