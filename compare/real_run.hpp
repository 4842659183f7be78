#pragma once
// A simulated training report (`twinsim simulate --json`) beside a real run of the user's own
// stack: a PyTorch profiler trace (kineto_trace.hpp) or a framework's log (training_log.hpp).
// Per category (kernel_categories.csv), the simulator's ops summed per step on its reported
// GPU against the trace's kernels per profiled step; exposed communication and idle time; the
// step; and whether the measured step lies in the prediction's 80% interval
// (time.step_s_interval). Kernels no row of the table matches are listed, never dropped.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "compare/comparison.hpp"
#include "compare/kineto_trace.hpp"
#include "compare/training_log.hpp"

namespace twinsim::compare {

struct RealRunComparison {
  std::string run;                          // "PyTorch profiler trace" or the log's format
  std::optional<Pair> step_s;
  std::optional<Pair> tokens_per_s_per_gpu, tflops_per_gpu, mfu, peak_bytes;
  std::optional<std::vector<double>> step_s_interval;  // the prediction's, when the report has it
  std::vector<NamedPair> categories;        // per step: gemm, attention, ... (trace only)
  std::vector<NamedPair> collectives;       // per step, measured: communication.all_reduce, ...
  std::optional<Pair> exposed_comm_s, idle_s;
  std::vector<KernelGroup> unknown_kernels;
  std::vector<std::string> unknown_ops;     // simulator ops no row matched
  std::vector<std::string> notes;           // how each measured figure was read
};

RealRunComparison compare_with_trace(const nlohmann::json& simulated, const TraceRun& trace);
// `global_batch`: sequences per step, which a DeepSpeed log's samples/s needs to give a step.
RealRunComparison compare_with_log(const nlohmann::json& simulated, const LogRun& log,
                                   std::optional<double> global_batch = std::nullopt);

nlohmann::json to_json(const RealRunComparison& c);
std::string format_real_run(const RealRunComparison& c);

}  // namespace twinsim::compare
