#pragma once
// A PyTorch profiler trace (Kineto's Chrome trace JSON, `torch.profiler` with
// on_trace_ready=tensorboard_trace_handler or export_chrome_trace) read as what a step spent:
// the GPU kernels of one device summed per category (kernel_categories.hpp), per profiled step;
// the communication no compute kernel overlapped; the time no kernel ran.
//
// Definitions (tests/compare/check_trace_categories.py computes the same from the raw file):
// kernels are the events of cat "kernel", "gpu_memcpy" and "gpu_memset" with a duration, on the
// device with the most kernel time (args.device); steps are the "ProfilerStep#N" annotations
// (none: one step); the step time is their mean duration; the window runs from the first step's
// or kernel's start to the last one's end; per-step figures are totals over the steps. Exposed
// communication: the union of the communication kernels' intervals less its overlap with the
// other SM kernels' union (memcpy/memset left out: the copy engines). Idle: the window less the
// union of all SM kernels, per step.
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace twinsim::compare {

struct KernelGroup {
  std::string name;
  std::string category;
  long long calls = 0;
  double total_s = 0;  // over the whole trace
};

struct TraceRun {
  int device = 0;
  std::string gpu_name;                      // deviceProperties' name, when the trace has it
  int steps = 1;
  double step_s = 0;                         // mean ProfilerStep duration; 0 without steps
  double window_s = 0;
  std::map<std::string, double> category_s;  // per step; communication by collective
  double busy_s = 0, exposed_comm_s = 0, idle_s = 0;  // per step
  std::vector<KernelGroup> kernels;          // by name, most time first
  std::vector<KernelGroup> unknown;          // the kernels no row of the table matched
};

// Throws std::invalid_argument naming `origin` when the JSON has no traceEvents or no kernel.
TraceRun read_kineto_trace(const nlohmann::json& trace, const std::string& origin);

// Whether a parsed JSON file is a profiler trace (it has traceEvents).
bool is_kineto_trace(const nlohmann::json& j);

}  // namespace twinsim::compare
