#include "app/trace_calibration.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "io/whole_file.hpp"
#include "scenario/load.hpp"

namespace twinsim {

namespace {

constexpr const char* kKindNames[3] = {"gemm", "attention", "memory"};  // MeasuredKernelKind's order

Dtype dtype_of(const std::string& type) {
  if (type == "c10::Half") return Dtype::fp16;
  if (type == "float") return Dtype::fp32;
  return Dtype::bf16;  // c10::BFloat16, and what a trace does not say
}

// The catalog GPU the node type carries, by its name.
std::string gpu_preset_of(const ClusterSpec& node) {
  for (const std::string& name : catalog_gpu_names())
    if (catalog_gpu(name).name == node.gpu.name) return name;
  throw std::runtime_error("--cluster " + node.name + ": its GPU " + node.gpu.name + " is in no catalog GPU file");
}

std::string curve_yaml(const std::vector<EfficiencyPoint>& curve) {
  std::ostringstream y;
  y << std::setprecision(4) << "[";
  for (std::size_t i = 0; i < curve.size(); ++i) y << (i ? ", " : "") << "[" << curve[i].size << ", " << curve[i].efficiency << "]";
  return y.str() + "]";
}

std::string percent(double fraction) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(1) << std::showpos << 100 * fraction << "%";
  return s.str();
}

// One trace judged: step and kernels per step, predicted against measured (TraceJudgement).
nlohmann::json judgement_json(const compare::TraceOps& trace, const TraceJudgement& j) {
  const double steps = std::max(1, trace.steps);
  nlohmann::json by_kind = nlohmann::json::object();
  for (int kind = 0; kind < 3; ++kind)
    by_kind[kKindNames[kind]] = {{"predicted_s", j.predicted_by_kind[kind] / steps}, {"measured_s", j.measured_by_kind[kind] / steps}};
  return {{"steps", trace.steps},
          {"step_s", {{"predicted", j.predicted_step_s / steps}, {"measured", trace.step_s}}},
          {"sized_kernel_s", {{"predicted", j.predicted_kernel_s / steps}, {"measured", j.measured_s / steps}}},
          {"kernel_s", trace.kernel_s()},
          {"by_kind", by_kind},
          {"median_kernel_error", j.per_kernel.median}};
}

std::string ratio(const nlohmann::json& pair) {
  const double measured = pair["measured"].get<double>();
  return measured > 0 ? percent(pair["predicted"].get<double>() / measured - 1) : "n/a";
}

// The judgement as one line of text.
std::string judgement_line(const std::string& label, const nlohmann::json& j) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(2) << label << ": step " << 1e3 * j["step_s"]["predicted"].get<double>()
    << " ms predicted, " << 1e3 * j["step_s"]["measured"].get<double>() << " ms measured (" << ratio(j["step_s"])
    << "); sized kernels " << 1e3 * j["sized_kernel_s"]["predicted"].get<double>() << " ms against "
    << 1e3 * j["sized_kernel_s"]["measured"].get<double>() << " ms (" << ratio(j["sized_kernel_s"]);
  for (const char* kind : kKindNames) {
    const nlohmann::json& k = j["by_kind"][kind];
    s << "; " << kind << " " << (k["measured_s"].get<double>() > 0 ? percent(k["predicted_s"].get<double>() / k["measured_s"].get<double>() - 1) : "none");
  }
  s << std::setprecision(1) << "), " << 100 * j["sized_kernel_s"]["measured"].get<double>() / j["kernel_s"].get<double>()
    << "% of the kernel time sized";
  return s.str();
}

nlohmann::json fit_json(const TraceFit& fit) {
  nlohmann::json gemm = nlohmann::json::array(), attention = nlohmann::json::object();
  for (const EfficiencyPoint& p : fit.gemm) gemm.push_back({p.size, p.efficiency});
  for (const auto& [head_dim, curve] : fit.attention_by_seq) {
    nlohmann::json c = nlohmann::json::array();
    for (const EfficiencyPoint& p : curve) c.push_back({p.size, p.efficiency});
    attention[std::to_string(head_dim)] = c;
  }
  return {{"gemm_efficiency", gemm}, {"attention_efficiency_by_seq", attention},
          {"memory_efficiency", fit.memory_efficiency}, {"memory_by_family", fit.memory_by_family},
          {"kernels", {{"gemm", fit.gemms}, {"attention", fit.attentions}, {"memory", fit.memories}}}};
}

std::string node_yaml(const std::string& node, const std::string& gpu, const GpuSpec& catalog, const TraceFit& fit,
                      const std::string& header) {
  std::ostringstream y;
  y << header << "preset: " << node << "\ngpu:\n  preset: " << gpu << "\n";
  if (!fit.gemm.empty()) y << "  gemm_efficiency: " << curve_yaml(fit.gemm) << "   # " << fit.gemms << " GEMM kernels, by FLOPs\n";
  if (!fit.attention_by_seq.empty()) {
    y << "  attention_efficiency_by_seq:   # " << fit.attentions
      << " flash kernels (FlashAttention-2's curves), forward, by keys per query; bwd: the catalog's\n";
    for (const auto& [head_dim, curve] : fit.attention_by_seq) {
      y << "    " << head_dim << ": {fwd: " << curve_yaml(curve);
      const auto own = catalog.attention_efficiency_by_seq.find(head_dim);  // the backward stays the catalog's
      if (own != catalog.attention_efficiency_by_seq.end() && !own->second.bwd.empty()) y << ", bwd: " << curve_yaml(own->second.bwd);
      y << "}\n";
    }
  }
  // the catalog's memory_efficiency is the streaming rate of copies, adds and activations on
  // contiguous data: the "elementwise" kernels' (all of the trace's where it has none)
  const auto streaming = fit.memory_by_family.find("elementwise");
  const double memory = streaming != fit.memory_by_family.end() ? streaming->second : fit.memory_efficiency;
  if (memory > 0)
    y << "  memory_efficiency: " << std::setprecision(4) << memory << "   # "
      << (streaming != fit.memory_by_family.end() ? "the contiguous element-wise kernels'" : "every memory-bound kernel's")
      << " bytes over their time; per kernel template (" << fit.memories << " kernels moving at least kernel_launch x HBM bandwidth bytes):\n";
  for (const auto& [family, efficiency] : fit.memory_by_family)
    y << "  # " << family << ": " << std::setprecision(3) << efficiency << " of the HBM bandwidth\n";
  return y.str();
}

}  // namespace

std::vector<MeasuredKernel> measured_kernels(const compare::TraceOps& trace) {
  std::vector<MeasuredKernel> out;
  for (const compare::TraceOp& op : trace.ops) {
    if (op.kind == compare::TraceOpKind::unsized) continue;
    MeasuredKernel k;
    k.kind = op.kind == compare::TraceOpKind::gemm        ? MeasuredKernelKind::gemm
             : op.kind == compare::TraceOpKind::attention ? MeasuredKernelKind::attention
                                                          : MeasuredKernelKind::memory;
    k.dtype = dtype_of(op.dtype);
    k.batch = op.batch, k.m = op.m, k.n = op.n, k.k = op.k;
    k.heads = op.heads, k.seq = op.seq, k.seq_kv = op.seq_kv, k.head_dim = op.head_dim;
    k.flops = op.flops, k.bytes = op.bytes, k.kernel_s = op.dur_s;
    k.family = op.family;
    out.push_back(k);
  }
  return out;
}

compare::TraceOps read_trace_ops_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open");
  const nlohmann::json parsed = nlohmann::json::parse(in, nullptr, false);
  if (parsed.is_discarded()) throw std::runtime_error(path + ": not JSON (a PyTorch profiler trace is)");
  return compare::read_trace_ops(parsed, path);
}

namespace {

// The share of `kernels`' time that no fitted figure prices: GEMMs without a fitted curve,
// attention of a head width the fit did not see, memory-bound kernels of another template.
double unfitted_share(const TraceFit& fit, const std::vector<MeasuredKernel>& kernels) {
  double unfitted = 0, total = 0;
  for (const MeasuredKernel& k : kernels) {
    const bool fitted = k.kind == MeasuredKernelKind::gemm        ? !fit.gemm.empty()
                        : k.kind == MeasuredKernelKind::attention ? fit.attention_by_seq.contains(static_cast<int>(k.head_dim))
                                                                  : fit.memory_by_family.contains(k.family);
    total += k.kernel_s;
    if (!fitted) unfitted += k.kernel_s;
  }
  return total > 0 ? unfitted / total : 0;
}

// What the fit does to each trace: the calibration trace's own kernels (before, fitted on its
// even kernels and judged on its odd ones, fitted on all) and each held-out trace's.
nlohmann::json trace_calibration_json(const TraceCalibrationArgs& a, const GpuSpec& catalog, TraceFit& fit) {
  const compare::TraceOps trace = read_trace_ops_file(a.trace);
  const std::vector<MeasuredKernel> kernels = measured_kernels(trace);
  if (kernels.empty()) throw std::runtime_error(a.trace + ": no kernel with a shape (profile with record_shapes=True)");
  std::vector<MeasuredKernel> even, odd;
  for (std::size_t i = 0; i < kernels.size(); ++i) (i % 2 ? odd : even).push_back(kernels[i]);
  const TraceJudgement halves = judge_trace_kernels(apply_trace_fit(catalog, fit_trace_kernels(catalog, even)), odd);
  fit = fit_trace_kernels(catalog, kernels);
  const GpuSpec fitted = apply_trace_fit(catalog, fit);
  nlohmann::json out = {{"trace", a.trace}, {"gpu", trace.gpu_name}, {"cluster", a.cluster}, {"fit", fit_json(fit)},
                        {"before", judgement_json(trace, judge_trace_kernels(catalog, kernels))},
                        {"fitted", judgement_json(trace, judge_trace_kernels(fitted, kernels))},
                        {"odd_kernels", {{"median_kernel_error", halves.per_kernel.median},
                                         {"sum_error", halves.predicted_kernel_s / halves.measured_s - 1}}}};
  out["held_out"] = nlohmann::json::array();
  for (const std::string& other : a.judge) {
    const compare::TraceOps held = read_trace_ops_file(other);
    const std::vector<MeasuredKernel> held_kernels = measured_kernels(held);
    out["held_out"].push_back({{"trace", other}, {"gpu", held.gpu_name},
                               {"before", judgement_json(held, judge_trace_kernels(catalog, held_kernels))},
                               {"fitted", judgement_json(held, judge_trace_kernels(fitted, held_kernels))},
                               {"unfitted_share", unfitted_share(fit, held_kernels)}});
  }
  return out;
}

std::string report_text(const nlohmann::json& j, const std::string& gpu_name) {
  std::ostringstream r;
  r << "calibrated on " << j["trace"].get<std::string>() << " (" << j["gpu"].get<std::string>() << ")\n"
    << judgement_line("before (the catalog's " + gpu_name + ")", j["before"]) << "\n"
    << "fitted on its even kernels, its odd ones: median kernel error "
    << percent(j["odd_kernels"]["median_kernel_error"].get<double>()) << ", their sum "
    << percent(j["odd_kernels"]["sum_error"].get<double>()) << "\n"
    << judgement_line("fitted on all", j["fitted"]) << "\n";
  for (const nlohmann::json& h : j["held_out"])
    r << "held out " << h["trace"].get<std::string>() << " (" << h["gpu"].get<std::string>() << ")\n  "
      << judgement_line("before", h["before"]) << "\n  " << judgement_line("fitted", h["fitted"]) << "\n  "
      << std::fixed << std::setprecision(1) << 100 * h["unfitted_share"].get<double>()
      << "% of its sized kernel time is of kinds the calibration trace has none of (priced by the catalog's figures)\n";
  return r.str();
}

}  // namespace

std::string calibrate_from_trace(const TraceCalibrationArgs& a) {
  const ClusterSpec node = catalog_node(a.cluster);
  const std::string gpu_name = gpu_preset_of(node);
  TraceFit fit;
  const nlohmann::json j = trace_calibration_json(a, node.gpu, fit);
  const std::string report = report_text(j, gpu_name);
  std::string header = "# written by `twinsim calibrate --from-trace " + a.trace + " --cluster " + a.cluster + "`\n";
  std::istringstream lines(report);
  for (std::string line; std::getline(lines, line);) header += "# " + line + "\n";
  const std::string yaml = node_yaml(a.cluster, gpu_name, node.gpu, fit, header);
  if (!a.out.empty()) io::write_file_whole(a.out, yaml);
  if (a.json)
    std::cout << j.dump(2) << "\n";
  else
    std::cout << report << (a.out.empty() ? yaml : "wrote " + a.out + "\n");
  return yaml;
}

}  // namespace twinsim
