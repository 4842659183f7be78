#include "sim/validate/trace_fit.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "sim/validate/gemm_fit.hpp"

namespace twinsim {

namespace {

bool sixteen_bit(Dtype d) { return d == Dtype::bf16 || d == Dtype::fp16; }

MeasuredGemm as_measured_gemm(const MeasuredKernel& kernel) {
  MeasuredGemm g;
  g.dtype = kernel.dtype;
  g.batch = kernel.batch, g.m = kernel.m, g.n = kernel.n, g.k = kernel.k;  // PyTorch's row-major shapes
  g.tflops = kernel.flops / kernel.kernel_s / 1e12;
  return g;
}

// Points within a factor of two in size (rounded log2) share one: their medians.
std::vector<EfficiencyPoint> octave_medians(const std::vector<std::pair<double, double>>& size_efficiency) {
  std::map<long, std::pair<std::vector<double>, std::vector<double>>> by_octave;
  for (const auto& [size, efficiency] : size_efficiency) {
    auto& [sizes, values] = by_octave[std::lround(std::log2(size))];
    sizes.push_back(size);
    values.push_back(efficiency);
  }
  std::vector<EfficiencyPoint> curve;
  for (const auto& [octave, points] : by_octave)
    curve.push_back({percentile(points.first, 0.5), percentile(points.second, 0.5)});
  return curve;
}

}  // namespace

ComputeOp measured_kernel_op(const MeasuredKernel& kernel) {
  if (kernel.kind == MeasuredKernelKind::gemm) return measured_op(as_measured_gemm(kernel));
  ComputeOp op;
  op.dtype = kernel.dtype;
  if (kernel.kind == MeasuredKernelKind::attention) {
    op.kind = ComputeKind::attention;
    op.flops = kernel.flops;
    op.head_dim = kernel.head_dim;
    op.kv_len = kernel.seq_kv;
    // q and the output, k and v, each read or written once
    const double per_token = static_cast<double>(kernel.batch * kernel.heads * kernel.head_dim) * dtype_bits(kernel.dtype) / 8.0;
    op.bytes = per_token * 2.0 * static_cast<double>(kernel.seq + kernel.seq_kv);
    return op;
  }
  op.kind = ComputeKind::elementwise;  // its template's share where the GPU names it, else memory_efficiency
  op.kernel = kernel.family;
  op.bytes = kernel.bytes;
  return op;
}

TraceFit fit_trace_kernels(const GpuSpec& gpu, const std::vector<MeasuredKernel>& kernels) {
  TraceFit fit;
  std::vector<MeasuredGemm> gemms;
  std::map<int, std::vector<std::pair<double, double>>> attention;
  double memory_bytes = 0, memory_s = 0;
  std::map<std::string, std::pair<double, double>> by_family;  // bytes, seconds
  for (const MeasuredKernel& k : kernels) {
    if (k.kernel_s <= 0) continue;
    if (k.kind == MeasuredKernelKind::gemm && sixteen_bit(k.dtype) && k.flops > 0) {
      // a GEMM whose roofline is its memory side (a batch of 8 x 8 products) says nothing of the curve
      if (!op_cost(gpu, measured_kernel_op(k)).memory_bound()) gemms.push_back(as_measured_gemm(k));
    } else if (k.kind == MeasuredKernelKind::attention && k.seq_kv > 0 && k.head_dim > 0) {
      // against the full square, as the op list counts it (a causal kernel reaches up to 2)
      attention[static_cast<int>(k.head_dim)].emplace_back(static_cast<double>(k.seq_kv), k.flops / k.kernel_s / gpu.peak(k.dtype));
      ++fit.attentions;
    } else if (k.kind == MeasuredKernelKind::memory && k.bytes >= gpu.hbm_bandwidth_Bps * gpu.kernel_launch_s) {
      // only kernels whose bytes take a launch's time at the peak or longer: below that a
      // kernel's fixed time rules (the engine adds kernel_launch for it), not the bandwidth
      memory_bytes += k.bytes;
      memory_s += k.kernel_s;
      by_family[k.family].first += k.bytes;
      by_family[k.family].second += k.kernel_s;
      ++fit.memories;
    }
  }
  fit.gemms = static_cast<int>(gemms.size());
  if (!gemms.empty()) fit.gemm = fit_gemm_curve(gpu, gemms, GemmTiming::kernel);
  for (const auto& [head_dim, points] : attention) fit.attention_by_seq[head_dim] = octave_medians(points);
  // bytes over time, summed: each kernel weighs by its time, as it does in a step
  if (memory_s > 0) fit.memory_efficiency = memory_bytes / memory_s / gpu.hbm_bandwidth_Bps;
  for (const auto& [family, sums] : by_family) fit.memory_by_family[family] = sums.first / sums.second / gpu.hbm_bandwidth_Bps;
  return fit;
}

GpuSpec apply_trace_fit(GpuSpec gpu, const TraceFit& fit) {
  if (!fit.gemm.empty()) gpu.gemm_efficiency = fit.gemm;
  // the forward is what a trace of forward passes shows; the backward keeps the GPU's own curve
  for (const auto& [head_dim, curve] : fit.attention_by_seq) gpu.attention_efficiency_by_seq[head_dim].fwd = curve;
  // the kernels the GPU names (kernel_efficiency) keep their curves: a trace's ops are not the op list's
  if (fit.memory_efficiency > 0) gpu.memory_efficiency = fit.memory_efficiency;
  for (const auto& [family, efficiency] : fit.memory_by_family) gpu.kernel_efficiency[family] = PassCurves{{{1, efficiency}}, {}};
  return gpu;
}

TraceJudgement judge_trace_kernels(const GpuSpec& gpu, const std::vector<MeasuredKernel>& kernels) {
  TraceJudgement j;
  std::vector<double> errors;
  for (const MeasuredKernel& k : kernels) {
    const ComputeCost c = op_cost(gpu, measured_kernel_op(k));
    const double alone = c.time_s() - c.launch_s;
    j.measured_s += k.kernel_s;
    j.predicted_kernel_s += alone;
    j.predicted_step_s += c.time_s();
    j.measured_by_kind[static_cast<int>(k.kind)] += k.kernel_s;
    j.predicted_by_kind[static_cast<int>(k.kind)] += alone;
    if (k.kernel_s > 0) errors.push_back(alone / k.kernel_s - 1);
  }
  j.per_kernel = summarize(errors);
  return j;
}

}  // namespace twinsim
