#pragma once
// `twinsim calibrate --from-trace TRACE --cluster NODE --out FILE.yaml [--judge OTHER...]`:
// fits a catalog GPU's GEMM, flash attention and memory-bound figures to the kernels of a
// PyTorch profiler trace recorded with shapes (compare/trace_ops.hpp reads it,
// sim/validate/trace_fit.hpp fits), writes a node file a scenario names as its cluster, and
// judges the fit: the trace's own kernels, even ones fitting and odd ones held out, and each
// --judge trace (another model or shape on the same GPU) whole, its step included.
#include <string>
#include <vector>

#include "compare/trace_ops.hpp"
#include "sim/validate/trace_fit.hpp"

namespace twinsim {

struct TraceCalibrationArgs {
  std::string trace, cluster, out;
  std::vector<std::string> judge;
  bool json = false;  // print the judgement as JSON (the fit and every trace's figures) instead of text
};

// The trace's sized kernels as the fitters take them (unsized ones left out).
std::vector<MeasuredKernel> measured_kernels(const compare::TraceOps& trace);

compare::TraceOps read_trace_ops_file(const std::string& path);

// Fits, writes `out` (when named), prints the judgement; returns the node file's text.
std::string calibrate_from_trace(const TraceCalibrationArgs& args);

}  // namespace twinsim
