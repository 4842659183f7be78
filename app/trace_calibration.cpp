#include "app/trace_calibration.hpp"

#include <cmath>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include "io/whole_file.hpp"
#include "scenario/load.hpp"

namespace twinsim {

namespace {

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

// One line per trace judged: step and kernels, predicted against measured.
std::string judgement_line(const std::string& label, const compare::TraceOps& trace, const TraceJudgement& j) {
  const double sized = j.measured_s / std::max(1, trace.steps);
  std::ostringstream s;
  s << std::fixed << std::setprecision(2) << label << ": step " << 1e3 * j.predicted_step_s / std::max(1, trace.steps)
    << " ms predicted, " << 1e3 * trace.step_s << " ms measured ("
    << percent(j.predicted_step_s / std::max(1, trace.steps) / trace.step_s - 1) << "); kernels " << 1e3 * j.predicted_kernel_s / std::max(1, trace.steps)
    << " ms against " << 1e3 * sized << " ms (" << percent(j.predicted_kernel_s / j.measured_s - 1) << "; gemm "
    << percent(j.predicted_by_kind[0] / j.measured_by_kind[0] - 1) << ", attention "
    << percent(j.predicted_by_kind[1] / j.measured_by_kind[1] - 1) << ", memory-bound "
    << percent(j.predicted_by_kind[2] / j.measured_by_kind[2] - 1) << "); sized kernels " << std::setprecision(1)
    << 100 * sized / trace.kernel_s() << "% of the kernel time";
  return s.str();
}

std::string node_yaml(const std::string& node, const std::string& gpu, const TraceFit& fit, const std::string& header) {
  std::ostringstream y;
  y << header << "preset: " << node << "\ngpu:\n  preset: " << gpu << "\n";
  if (!fit.gemm.empty()) y << "  gemm_efficiency: " << curve_yaml(fit.gemm) << "   # " << fit.gemms << " GEMM kernels, by FLOPs\n";
  if (!fit.attention_by_seq.empty()) {
    y << "  attention_efficiency_by_seq:   # " << fit.attentions << " flash kernels, forward, by keys per query\n";
    for (const auto& [head_dim, curve] : fit.attention_by_seq) y << "    " << head_dim << ": {fwd: " << curve_yaml(curve) << "}\n";
  }
  if (fit.memory_efficiency > 0)
    y << "  memory_efficiency: " << std::setprecision(4) << fit.memory_efficiency << "   # " << fit.memories
      << " memory-bound kernels: their bytes over their time\n";
  for (const auto& [family, efficiency] : fit.memory_by_family)
    y << "  # " << family << " kernels: " << std::setprecision(3) << efficiency << " of the HBM bandwidth\n";
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

std::string calibrate_from_trace(const TraceCalibrationArgs& a) {
  const ClusterSpec node = catalog_node(a.cluster);
  const std::string gpu_name = gpu_preset_of(node);
  const compare::TraceOps trace = read_trace_ops_file(a.trace);
  const std::vector<MeasuredKernel> kernels = measured_kernels(trace);
  if (kernels.empty()) throw std::runtime_error(a.trace + ": no kernel with a shape (profile with record_shapes=True)");
  // the trace's own kernels: even ones fit, odd ones judge
  std::vector<MeasuredKernel> even, odd;
  for (std::size_t i = 0; i < kernels.size(); ++i) (i % 2 ? odd : even).push_back(kernels[i]);
  const GpuSpec half = apply_trace_fit(node.gpu, fit_trace_kernels(node.gpu, even));
  const TraceFit fit = fit_trace_kernels(node.gpu, kernels);
  const GpuSpec fitted = apply_trace_fit(node.gpu, fit);
  std::ostringstream report;
  report << "calibrated on " << a.trace << " (" << trace.gpu_name << ", " << kernels.size() << " sized kernels)\n"
         << "before, the catalog's " << gpu_name << ": " << judgement_line("this trace", trace, judge_trace_kernels(node.gpu, kernels)) << "\n"
         << "fitted on the even kernels, the odd ones: median kernel error "
         << percent(judge_trace_kernels(half, odd).per_kernel.median) << ", their sum "
         << percent(judge_trace_kernels(half, odd).predicted_kernel_s / judge_trace_kernels(half, odd).measured_s - 1) << "\n"
         << "fitted on all: " << judgement_line("this trace", trace, judge_trace_kernels(fitted, kernels)) << "\n";
  for (const std::string& other : a.judge) {
    const compare::TraceOps held = read_trace_ops_file(other);
    const std::vector<MeasuredKernel> held_kernels = measured_kernels(held);
    report << "held out, before: " << judgement_line(other, held, judge_trace_kernels(node.gpu, held_kernels)) << "\n"
           << "held out, fitted: " << judgement_line(other, held, judge_trace_kernels(fitted, held_kernels)) << "\n";
  }
  std::string header = "# written by `twinsim calibrate --from-trace " + a.trace + " --cluster " + a.cluster + "`\n";
  std::istringstream lines(report.str());
  for (std::string line; std::getline(lines, line);) header += "# " + line + "\n";
  const std::string yaml = node_yaml(a.cluster, gpu_name, fit, header);
  if (!a.out.empty()) io::write_file_whole(a.out, yaml);
  std::cout << report.str() << (a.out.empty() ? yaml : "wrote " + a.out + "\n");
  return yaml;
}

}  // namespace twinsim
