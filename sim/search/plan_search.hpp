#pragma once
// `twinsim search`: every valid plan of a training scenario's model, cluster and global
// batch over a range of GPU counts; those that do not fit in memory dropped; the rest
// ranked by the closed-form estimate (analytic.hpp); the best few re-checked with the
// scenario validator and simulated with the event engine (predict_training), then
// re-ranked by the simulated step; plus the Pareto front of step time, memory and GPUs.
#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "scenario/scenario.hpp"
#include "sim/goodput/goodput.hpp"
#include "sim/search/analytic.hpp"
#include "sim/search/pareto.hpp"
#include "sim/search/search_space.hpp"

namespace twinsim {

// step_time: fastest step. cost: fewest GPU-seconds per step (step x GPUs), i.e. the
// cheapest at a fixed price per GPU-hour. tokens_per_s: most tokens per second — for a
// fixed global batch the same order as step_time.
enum class Objective { step_time, cost, tokens_per_s };
bool parse_objective(const std::string& name, Objective& out);
std::string_view to_string(Objective o);

struct SearchOptions {
  SearchSpaceOptions space;
  Objective objective = Objective::step_time;
  int top = 10;           // plans reported
  int confirm = 0;        // plans simulated with the event engine (0: 2 x top)
  bool simulate = true;   // false: analytic only (no engine)
  // called every `progress_every` candidates and once at the end
  std::function<void(std::int64_t done, std::int64_t total)> progress;
  std::int64_t progress_every = 1'000'000;
  // Refuse, before estimating, a space of more plans than this (the whole space, over all
  // shards; counted without estimating: GPT-3 175B over 1..16,777,216 GPUs, 14.2M plans,
  // refused in 0.02 s; estimated at 1.6M a second, 8.8 s); 0: no limit.
  std::int64_t max_plans = 50'000'000;
};

struct SearchEntry {
  Candidate plan;
  AnalyticEstimate analytic;
  bool simulated = false;
  double simulated_step_s = 0;      // predict_training, fast fidelity
  std::array<double, 2> step_s_interval{0, 0};  // its 80% trust interval (sim/trust/), when simulated
  std::int64_t memory_peak_bytes = 0;  // predict_memory of the validated scenario
  double score = 0;                 // objective, lower is better (simulated when available)
};

struct SearchResult {
  std::int64_t candidates = 0;  // enumerated and estimated
  std::int64_t fitting = 0;
  std::int64_t rejected_by_validator = 0;  // among the confirmed: should stay 0
  double analytic_s = 0;        // wall time of the analytic pass
  double confirm_s = 0;
  std::vector<SearchEntry> top;          // best first
  // with the scenario's `goodput:` section, one per top entry: its goodput at its (simulated)
  // step time; shown, not ranked by
  std::vector<GoodputReport> top_goodput;
  std::vector<ParetoPoint> pareto;       // sorted by GPUs, then step time
  Plan scenario_plan;                    // the searched scenario's: each plan's overrides change it
  // The scenario's stack, and whether it got it by default. Then each plan is priced on its own
  // plan's default (candidate_scenario: a ZeRO-3 plan with pp > 1 on torchtitan-compile, a
  // ZeRO-1 plan on megatron-core), and its overrides name that stack.
  std::string stack;
  bool stack_is_default = false;
  bool stack_follows_plan = false;                      // default_stack_follows_plan of the scenario
  std::string_view stack_of(const Candidate& c) const;  // the stack `c` was priced on
};

// Lower is better for every objective.
double objective_score(Objective o, double step_s, std::int64_t gpus, const TrainingWorkload& t);

// The analytic pass alone over one shard of the space: the best `keep` fitting plans
// (by objective, ties broken canonically) and the Pareto front.
struct AnalyticPass {
  std::int64_t candidates = 0, fitting = 0;
  std::vector<SearchEntry> best;  // sorted best first
  ParetoFront pareto;
};
// How many of the pass's best plans the event engine confirms: options.confirm, or 2 x top.
int confirm_count(const SearchOptions& options);

AnalyticPass run_analytic_pass(const Scenario& base, const SearchOptions& options, int keep);

// Merges shards' passes (MPI): the result equals one pass over the whole space.
AnalyticPass merge_passes(const std::vector<AnalyticPass>& parts, int keep);

// Confirms the best entries with the validator and the event engine.
SearchResult finish_search(const Scenario& base, const SearchOptions& options, const AnalyticPass& pass);

SearchResult search_plans(const Scenario& base, const SearchOptions& options);

}  // namespace twinsim
