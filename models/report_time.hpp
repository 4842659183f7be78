#pragma once
// The report's "time" section (docs/SCENARIO.md, "time"), the keys both sides share: the
// simulator's prediction (sim/training/training_report) and the executor's measurement
// (exec/train/run_report) are written through TimeSection, and the text report and the
// comparison (compare/) read them back through it, so its keys live in this file only. The
// simulator adds its own detail beside them (time.ops, stages, utilization, kernels).
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace twinsim {

// The step's time on the reported GPU, split by what its compute stream did (the
// predicted side's time.breakdown): all keys sum to step_s.
struct TimeBreakdown {
  double compute_s = 0;
  double recompute_s = 0;
  double tp_comm_s = 0;          // on the compute stream, or exposed when overlapped
  double cp_comm_s = 0;          // exposed part (ring attention overlaps the rest)
  double ep_comm_s = 0;
  double optimizer_s = 0;
  double dp_comm_exposed_s = 0;  // idle while only data-parallel communication ran
  double offload_exposed_s = 0;  // idle while only activation copies to or from CPU memory ran
  double pp_bubble_s = 0;        // idle otherwise: pipeline fill/drain and transfers
  double sum() const {
    return compute_s + recompute_s + tp_comm_s + cp_comm_s + ep_comm_s + optimizer_s + dp_comm_exposed_s +
           offload_exposed_s + pp_bubble_s;
  }
};

nlohmann::json to_json(const TimeBreakdown& b);
// Reads a time.breakdown object; a key missing from an older report reads 0, one that is
// not a number is refused naming it (std::invalid_argument, `where` naming the section).
TimeBreakdown read_time_breakdown(const nlohmann::json& j, const std::string& where);

struct TimeSection {
  double step_s = 0;
  // predicted
  std::optional<TimeBreakdown> breakdown;
  std::optional<int> reported_stage;   // the pipeline stage whose GPU the breakdown is
  std::optional<int> simulated_gpus;
  std::optional<double> gemm_clock;    // the GEMMs' clock under the power limit (1: none)
  std::vector<std::string> extrapolated_ops;  // ops priced beyond a measured curve's range
  // measured
  std::vector<double> steps_s;         // every step, warm-up included
  std::optional<int> warmup_steps;
};

// Writes the section's keys into `j` (an object, or null: made one), beside whatever the
// caller adds; the optional ones only when set.
void write_time_section(nlohmann::json& j, const TimeSection& t);
// Reads a report's "time" object; `side` names the report in errors. step_s is required.
TimeSection read_time_section(const nlohmann::json& time, const std::string& side);

}  // namespace twinsim
