#pragma once
// One point of the plan search space: every knob of the `plan` section plus the
// training micro-batch. Plain data (no strings, no vectors) so the analytic pass can
// walk millions of them without allocating.
#include <cstdint>
#include <string>

#include "models/plan.hpp"
#include "scenario/scenario.hpp"

namespace twinsim {

struct Candidate {
  int tp = 1, pp = 1, dp = 1, cp = 1, ep = 1;
  int micro_batch = 1;
  int zero = 0;
  Recompute recompute = Recompute::none;
  Schedule schedule = Schedule::one_f_one_b;
  int virtual_stages = 1;
  bool sequence_parallel = false;
  bool overlap_grad_reduce = true;
  bool overlap_param_gather = true;
  bool tp_comm_overlap = false;
  bool offload_optimizer = false;  // ZeRO-Offload (searched with SearchSpaceOptions::consider_offload)

  std::int64_t gpus() const { return static_cast<std::int64_t>(tp) * pp * cp * dp; }
};

// Writes the candidate's knobs into a Plan (stage_layers left empty: layers / pp each).
void apply_to_plan(const Candidate& c, Plan& plan);

// The base scenario with the candidate's plan and micro-batch, as many catalog nodes as
// it needs, then resolve_and_validate: the same checks `twinsim simulate` runs.
// Throws ScenarioError when the candidate breaks a scenario rule.
Scenario candidate_scenario(const Scenario& base, const Candidate& c);

// The candidate as `--set` overrides, e.g. "plan.tp=8 plan.pp=4 ... training.micro_batch=1".
std::string to_overrides(const Candidate& c);
// Short human-readable form, e.g. "tp8 pp4 dp32 cp1 mb1 zero1 sel 1f1b sp".
std::string describe(const Candidate& c);

}  // namespace twinsim
