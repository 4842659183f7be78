#include "sim/report/report.hpp"

#include "models/report_schema.hpp"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "models/memory_category.hpp"
#include "models/param_count.hpp"
#include "models/plan_fields.hpp"
#include "models/report_inference.hpp"
#include "models/report_time.hpp"
#include "models/report_memory.hpp"
#include "models/report_throughput.hpp"
#include "sim/goodput/goodput_report.hpp"
#include "sim/inference/batch_prediction.hpp"
#include "sim/memory/memory_report.hpp"
#include "sim/memory/weights.hpp"
#include "sim/training/layer_costs.hpp"
#include "sim/training/training_report.hpp"
#include "sim/trust/prediction_interval.hpp"

namespace twinsim {

namespace {

std::string gib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", bytes / 1073741824.0);
  return buf;
}

std::string fixed(double v, const char* fmt) {
  char buf[48];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

void row(std::ostream& out, const std::string& label, const std::string& value) {
  out << "  " << label << std::string(label.size() < 28 ? 28 - label.size() : 1, ' ') << value << "\n";
}

void print_memory(std::ostream& out, const MemorySection& mem) {
  out << "memory per GPU (stage with the highest peak)\n";
  for (MemCategory c : kMemCategories)
    row(out, std::string(category_name(c)), gib(static_cast<double>(mem.breakdown[static_cast<std::size_t>(c)])));
  if (mem.host_bytes > 0)
    row(out, "host (offloaded)", gib(static_cast<double>(mem.host_bytes)) + " of " +
                                     gib(static_cast<double>(mem.host_capacity_bytes.value_or(0))) + " CPU memory");
  if (mem.nvme_bytes)
    row(out, "nvme (offloaded)", gib(static_cast<double>(*mem.nvme_bytes)) +
                                     (mem.nvme_capacity_bytes ? " of " + gib(static_cast<double>(*mem.nvme_capacity_bytes))
                                                              : std::string(" (drives' capacity not described)")));
  row(out, "peak", gib(static_cast<double>(mem.peak_bytes)) + " of " + gib(static_cast<double>(mem.capacity_bytes)) +
                       (mem.fits ? "  (fits)" : "  (DOES NOT FIT)"));
  if (mem.reserved_peak_bytes)  // PyTorch's caching allocator's reserve, and the device memory beside it
    row(out, "reserved", gib(static_cast<double>(*mem.reserved_peak_bytes)) + " + " +
                             gib(static_cast<double>(mem.outside_allocator_bytes.value_or(0))) +
                             " outside the allocator (CUDA context, NCCL)");
  if (mem.stages.size() > 1) {
    out << "  per stage peak:";
    for (const StagePeak& st : mem.stages) out << " " << fixed(static_cast<double>(st.peak_bytes) / 1073741824.0, "%.1f");
    out << " GiB\n";
  }
}

// The 80% trust interval of a predicted time and its basis (sim/trust/): one line, then why
// it is widened.
void print_interval(std::ostream& out, const std::string& what, const nlohmann::json& interval,
                    const nlohmann::json& basis, double predicted) {
  const double low = interval[0].get<double>(), high = interval[1].get<double>();
  out << "  80% interval of the " << what << ": " << fixed(low, "%.4g") << " - " << fixed(high, "%.4g") << " s ("
      << fixed(100 * (low / predicted - 1), "%+.0f%%") << " / " << fixed(100 * (high / predicted - 1), "%+.0f%%")
      << "), from " << basis["cases"].get<int>() << " held-out cases of " << basis["regime"].get<std::string>() << "\n";
  for (const auto& why : basis["reasons"]) out << "    widened: " << why.get<std::string>() << "\n";
}

void print_time(std::ostream& out, const TimeSection& time, const Throughput& tp, const nlohmann::json& time_json) {
  const double step = time.step_s;
  out << "step time " << fixed(step, "%.4f s") << " (breakdown of stage " << time.reported_stage.value_or(0)
      << "'s GPU; " << time.simulated_gpus.value_or(0) << " GPUs simulated)\n";
  if (time_json.contains("interval_basis")) print_interval(out, "step time", time_json["step_s_interval"], time_json["interval_basis"], step);
  const nlohmann::json breakdown = time.breakdown ? to_json(*time.breakdown) : nlohmann::json::object();
  for (const auto& [k, v] : breakdown.items())  // by key, as the JSON lists them
    row(out, k, fixed(v.get<double>(), "%.4f s") + fixed(100 * v.get<double>() / step, "  %5.1f%%"));
  out << "throughput\n";
  row(out, "tokens/s", fixed(tp.tokens_per_s, "%.0f"));
  row(out, "tokens/s per GPU", fixed(tp.tokens_per_s_per_gpu, "%.1f"));
  row(out, "model TFLOP/s per GPU", fixed(tp.model_tflops_per_gpu, "%.1f"));
  row(out, "hardware TFLOP/s per GPU", fixed(tp.hardware_tflops_per_gpu, "%.1f"));
  row(out, "MFU / HFU", fixed(100 * tp.mfu, "%.1f%%") + " / " + fixed(100 * tp.hfu, "%.1f%%"));
  if (time.gemm_clock && *time.gemm_clock < 1) row(out, "GEMM clock (power limit)", fixed(100 * *time.gemm_clock, "%.1f%%"));
  const std::vector<std::string>& beyond = time.extrapolated_ops;
  if (beyond.empty()) return;
  out << "warning: " << beyond.size() << " ops priced beyond the measured range (its end value held):";
  for (std::size_t i = 0; i < beyond.size() && i < 6; ++i) out << " " << beyond[i];
  out << (beyond.size() > 6 ? " ...\n" : "\n");
}

void print_inference(std::ostream& out, const nlohmann::json& inf) {
  out << "inference (one static batch per replica)\n";
  const InferenceSummary s = read_inference_summary(inf, "simulated");
  row(out, "time to first token", fixed(1e3 * s.ttft_s, "%.2f ms"));
  row(out, "time per output token", fixed(1e3 * s.tpot_s, "%.2f ms"));
  if (inf.contains("interval_basis")) {
    print_interval(out, "time to first token", inf["ttft_s_interval"], inf["interval_basis"], s.ttft_s);
    print_interval(out, "time per output token", inf["tpot_s_interval"], inf["interval_basis"], s.tpot_s);
  }
  row(out, "output tokens/s", fixed(s.output_tokens_per_s, "%.0f"));
  row(out, "KV cache bytes per token", fixed(s.kv_cache_bytes_per_token, "%.0f"));
  row(out, "max batch (paged KV)", fixed(inf["max_batch"].get<double>(), "%.0f"));
  if (inf["first_decode"].contains("host_s"))  // a stack with serving host time
    row(out, "engine host time", fixed(1e3 * inf["prefill"]["host_s"].get<double>(), "%.3f ms prefill, ") +
                                     fixed(1e3 * inf["first_decode"]["host_s"].get<double>(), "%.3f ms first decode"));
  if (inf.contains("disaggregation")) {
    const nlohmann::json& d = inf["disaggregation"];
    row(out, "disaggregated",
        std::to_string(d["prefill_replicas"].get<int>()) + " x TP" + std::to_string(d["prefill_tp"].get<int>()) +
            " prefill, " + std::to_string(d["decode_replicas"].get<int>()) + " x TP" +
            std::to_string(d["decode_tp"].get<int>()) + " decode, K,V transfer " +
            fixed(1e3 * d["kv_transfer_s"].get<double>(), "%.2f") + " ms");
  }
  if (inf.contains("speculative")) {
    const nlohmann::json& sp = inf["speculative"];
    const std::string by = sp.contains("draft_model") ? "draft " + sp["draft_model"].get<std::string>() : "n-gram";
    row(out, "speculative decoding",
        by + ", " + std::to_string(sp["tokens"].get<int>()) + " proposed, " +
            fixed(sp["tokens_per_step"].get<double>(), "%.2f") + " tokens per step");
  }
}

// The serving engine's host time a pass (StackSpec::serving_host_s).
// A stack's name as the report's first lines give it: "(default)" where the scenario named
// none and the loader chose its workload's (scenario/default_stack.hpp).
std::string stack_title(const Scenario& s) {
  return "stack " + s.stack.name + (s.stack_is_default ? " (default)" : "");
}

void print_serving_stack(std::ostream& out, const Scenario& s) {
  const StackSpec& st = s.stack;
  out << stack_title(s) << ": engine host " << fixed(st.serving_step_s * 1e6, "%.0f") << " us per pass and "
      << fixed(st.serving_sequence_s * 1e6, "%.1f") << " us per sequence, "
      << (st.serving_async ? "beside the GPU's previous pass (async)" : "before the pass, the GPU waiting");
  // passes carrying a prompt chunk run without CUDA graphs, op by op (sim/inference/iteration_cost.hpp)
  if (st.serving_eager_prefill)
    out << "; passes with a prompt chunk eager, " << fixed(st.host_torch_op_s * 1e6, "%.2f") << " us an op";
  // the node's host CPU against an x86 host's (cluster.host.cpu_time_scale, e.g. Grace's 2.75)
  if (s.cluster.host.cpu_time_scale != 1) out << "; host times x" << fixed(s.cluster.host.cpu_time_scale, "%.2f");
  out << "\n";
}

// The software the step runs on, as resolved on this GPU (sdpa and te pick a kernel by device).
void print_stack(std::ostream& out, const Scenario& s) {
  const StackSpec& st = s.stack;
  const std::string_view attention = resolved_attention_kernel(st, s.cluster.gpu);
  out << stack_title(s) << ": host " << fixed(st.host_op_s * 1e6, "%.0f") << " us per op";
  if (st.host_microbatch_s > 0) out << " and " << fixed(st.host_microbatch_s * 1e3, "%.1f") << " ms per micro-batch";
  // MoE layers' host time by call instead (models/moe_host_calls.hpp), where the census applies
  if (st.moe_host_census() && s.model.moe)
    out << " (MoE layers by call: " << fixed(st.host_torch_op_s * 1e6, "%.1f") << " us a torch op, "
        << fixed(st.host_gemm_launch_s * 1e6, "%.1f") << " us a GEMM launch, "
        << fixed(st.host_collective_s * 1e6, "%.1f") << " us a collective)";
  out << ", attention " << st.attention_kernel;
  if (attention != st.attention_kernel) out << " (" << attention << " on " << s.cluster.gpu.name << ")";
  out << ", layer kernels " << st.layer_kernels << ", loss " << st.loss_kernel;
  // 16-bit training's gradients kept and reduced in fp32 (Megatron's), which a reader of the
  // memory breakdown's grads would otherwise take for 2 bytes a parameter
  if (s.training && dp_gradient_dtype(st, s.training->precision) != dp_state_dtype(st, s.training->precision))
    out << ", gradients fp32";
  // the host's offloaded update, where the plan offloads it and the stack measures it
  if (s.plan.offload_optimizer && st.offload_update_s_per_param > 0)
    out << ", offloaded update " << fixed(st.offload_update_s_per_param * 1e9, "%.2f") << " ns a parameter";
  out << "\n";
}

// Said in the report's first lines: a prediction no validated regime covers.
void print_unvalidated(std::ostream& out, const nlohmann::json& report) {
  const nlohmann::json* basis = nullptr;
  if (report.contains("time") && report["time"].contains("interval_basis")) basis = &report["time"]["interval_basis"];
  else if (report.contains("inference") && report["inference"].contains("interval_basis"))
    basis = &report["inference"]["interval_basis"];
  if (!basis || (*basis)["validated"].get<bool>()) return;
  out << "warning: outside every validated regime: no held-out validation case runs this workload, GPU, stack and "
         "model kind together; its 80% interval (+-"
      << fixed(100 * (*basis)["half_width"].get<double>(), "%.0f") << "%) is borrowed from "
      << (*basis)["regime"].get<std::string>() << " and widened\n";
}

}  // namespace

nlohmann::json params_json(const Scenario& s) {
  const ParamCount c = count_params(s.model);
  return {{"total", c.total}, {"active", c.active}};
}

nlohmann::json memory_report(const Scenario& s) {
  return {{kSchemaVersionKey, kReportSchemaVersion}, {"params", params_json(s)}, {"memory", to_json(predict_memory(s))}};
}

nlohmann::json simulate_report(const Scenario& s, const std::string& trace_path, Fidelity fidelity,
                               engine::Exchange* exchange) {
  nlohmann::json report = memory_report(s);
  report["stack"] = {{"name", s.stack.name}, {"default", s.stack_is_default}};
  if (s.is_training()) {
    const TrainingPrediction p = exchange ? predict_training(s, trace_path, fidelity, *exchange)
                                          : predict_training(s, trace_path, fidelity);
    report["time"] = time_json(p);
    const trust::TrustInterval step = trust::step_interval(s, p);
    report["time"]["step_s_interval"] = trust::interval_json(step);
    report["time"]["interval_basis"] = trust::basis_json(step);
    report["throughput"] = to_json(p.throughput);
    if (s.goodput) report["goodput"] = to_json(predict_goodput(s, *s.goodput, p.step_s));
  }
  if (s.inference) {
    const InferencePrediction p = predict_inference(s);
    report["inference"] = to_json(p, *s.inference, s.plan.tp);
    // TTFT and TPOT share the serving regime: one basis, two intervals
    report["inference"]["ttft_s_interval"] = trust::interval_json(trust::serving_interval(s, p.ttft_s));
    const trust::TrustInterval tpot = trust::serving_interval(s, p.tpot_s);
    report["inference"]["tpot_s_interval"] = trust::interval_json(tpot);
    report["inference"]["interval_basis"] = trust::basis_json(tpot);
  }
  return report;
}

void print_report(std::ostream& out, const Scenario& s, const nlohmann::json& report) {
  out << "scenario " << (s.name.empty() ? "(unnamed)" : s.name) << ": " << s.model.name << " on "
      << s.plan.world_size() << " x " << s.cluster.gpu.name << " (" << s.cluster.nodes << " nodes of "
      << s.cluster.name << ")\n";
  out << "plan tp=" << s.plan.tp << " pp=" << s.plan.pp << " dp=" << s.plan.dp << " cp=" << s.plan.cp
      << " ep=" << s.plan.ep;
  if (s.plan.expert_tp > 0) out << " expert_tp=" << s.plan.expert_tp;  // folded MoE layouts only
  out << " zero=" << s.plan.zero << " recompute=" << to_string(s.plan.recompute);
  if (s.plan.recompute_modules != 0)
    out << " " << knob_text(ModuleSetKnob{"recompute_modules", &PlanKnobs::recompute_modules}, s.plan);
  out << " schedule=" << to_string(s.plan.schedule) << "\n";
  print_unvalidated(out, report);
  if (s.is_training() && s.stack.name != "none") print_stack(out, s);
  if (!s.is_training() && s.stack.has_serving_host_time()) print_serving_stack(out, s);
  if (s.stack.name == "none" && s.stack_is_default) out << stack_title(s) << ": the device alone, no host time\n";
  out << "parameters " << fixed(report["params"]["total"].get<double>() / 1e9, "%.2fB total")
      << fixed(report["params"]["active"].get<double>() / 1e9, ", %.2fB active") << "\n";
  print_memory(out, read_memory_section(report["memory"], "simulated"));
  if (report.contains("time"))
    print_time(out, read_time_section(report["time"], "simulated"), read_throughput_section(report["throughput"], "simulated"),
               report["time"]);
  if (report.contains("goodput")) print_goodput(out, report["goodput"]);
  if (report.contains("inference")) print_inference(out, report["inference"]);
}

}  // namespace twinsim
