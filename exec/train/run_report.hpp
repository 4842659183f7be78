#pragma once
// The measured counterpart of the simulator's report (SCENARIO.md "Report"): the same
// keys filled with what the run measured — parameters counted from the ranks' own
// shards, peak memory per category from the tracked allocator, the median step time —
// plus "ops" (per-op measured times under the simulator's names) and "losses".
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "exec/runtime/process_groups.hpp"
#include "exec/runtime/profiler.hpp"
#include "exec/runtime/allocator.hpp"
#include "exec/train/trainer.hpp"
#include "hardware/gpu_spec.hpp"

namespace twinsim::exec {

struct RunRecord {
  std::vector<StepResult> steps;  // every step, the warm-up one first
  int warmup_steps = 1;           // left out of the step time
};

// A collective over the world: every rank calls it; rank 0 gets the report, the others null.
nlohmann::json measured_report(const TrainConfig& config, const GpuSpec& gpu, ProcessGroups& groups,
                               Trainer& trainer, const Allocator& allocator, const Profiler& profiler,
                               const RunRecord& record);

// A collective over the world: rank 0 gets {"params": {"total", "active"}, "memory": the
// report's memory section with per_rank}, counted from every rank's stage and allocator.
nlohmann::json measured_params_and_memory(TransformerStage& stage, ProcessGroups& groups,
                                          const Allocator& allocator, const GpuSpec& gpu);

// Median of the step times after the warm-up (all of them when there are no others).
double median_step_seconds(const RunRecord& record);

}  // namespace twinsim::exec
