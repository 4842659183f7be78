#pragma once
// From the kernels of a real run's profiler trace to the figures the cost model reads, and
// back to errors (`twinsim calibrate --from-trace`, issue 55): a GPU's GEMM efficiency by
// FLOPs, its flash attention's by the keys each query sees, its memory-bound kernels' share
// of HBM. Each kernel is priced as the simulator prices the op (sim/cost/compute_cost.hpp),
// so a fitted figure is the one that makes the simulator reproduce the trace.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "hardware/gpu_spec.hpp"
#include "models/dtype.hpp"
#include "sim/cost/compute_cost.hpp"
#include "sim/validate/error_stats.hpp"

namespace twinsim {

enum class MeasuredKernelKind { gemm, attention, memory };

// One kernel of a trace, sized by the op that launched it (compare/trace_ops.hpp reads them).
struct MeasuredKernel {
  MeasuredKernelKind kind = MeasuredKernelKind::memory;
  Dtype dtype = Dtype::bf16;
  std::int64_t batch = 1, m = 0, n = 0, k = 0;  // gemm: batch x [m,k] x [k,n]
  std::int64_t heads = 0, seq = 0, seq_kv = 0, head_dim = 0;  // attention (batch too)
  double flops = 0;                            // gemm, attention (full square)
  double bytes = 0;                            // memory
  std::string family;                          // memory: the kernel's template (compare::kernel_family)
  double kernel_s = 0;                         // the kernel's duration on the device
};

// The simulator's op for a measured kernel (no launch in it: ComputeCost::launch_s apart).
ComputeOp measured_kernel_op(const MeasuredKernel& kernel);

struct TraceFit {
  std::vector<EfficiencyPoint> gemm;           // 16-bit GEMMs by FLOPs (gemm_fit.hpp's procedure)
  std::map<int, std::vector<EfficiencyPoint>> attention_by_seq;  // by head_dim: keys per query -> efficiency
  // the memory-bound kernels' bytes over their time, of HBM, over those that move at least
  // hbm_bandwidth x kernel_launch bytes (13 MB on an H100): smaller ones take their fixed time
  double memory_efficiency = 0;
  std::map<std::string, double> memory_by_family;  // the same per kernel template
  int gemms = 0, attentions = 0, memories = 0;  // kernels each fit used
};

// Fits the figures to `kernels` on `gpu` (a catalog GPU: its peaks and HBM bandwidth stay);
// a kind with no kernel leaves its figure empty (0), and apply_trace_fit keeps the GPU's.
TraceFit fit_trace_kernels(const GpuSpec& gpu, const std::vector<MeasuredKernel>& kernels);
GpuSpec apply_trace_fit(GpuSpec gpu, const TraceFit& fit);

// The simulator's time for each kernel against its duration, by kind and in all: `kernel`
// sums the kernels alone, `step` adds one kernel_launch per kernel, as the engine does.
struct TraceJudgement {
  double measured_s = 0, predicted_kernel_s = 0, predicted_step_s = 0;
  double measured_by_kind[3] = {0, 0, 0}, predicted_by_kind[3] = {0, 0, 0};  // MeasuredKernelKind order
  ErrorSummary per_kernel;  // signed relative errors, kernel alone
};
TraceJudgement judge_trace_kernels(const GpuSpec& gpu, const std::vector<MeasuredKernel>& kernels);

}  // namespace twinsim
