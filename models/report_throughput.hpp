#pragma once
// The report's "throughput" section (docs/SCENARIO.md): what the simulator predicts for a
// training step (sim/training/training_report) and what the executor measures
// (exec/train/run_report) are written through this struct, and the text report reads it
// back through it, so its keys live in this file only.
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace twinsim {

struct Throughput {
  double tokens_per_s = 0;
  double tokens_per_s_per_gpu = 0;
  double model_tflops_per_gpu = 0;     // the model's FLOPs (no recompute) per second per GPU
  double hardware_tflops_per_gpu = 0;  // with the recomputed forward
  double mfu = 0;                      // model FLOPs / the GPU's dense peak
  double hfu = 0;                      // hardware FLOPs / the peak
};

nlohmann::json to_json(const Throughput& t);

// Reads a report's "throughput" object; `side` names the report in errors. Every key is
// required (std::invalid_argument naming it).
Throughput read_throughput_section(const nlohmann::json& throughput, const std::string& side);

}  // namespace twinsim
