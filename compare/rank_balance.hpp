#pragma once
// A measured run that the host disturbed (issue 61): on a shared VM the host can slow one
// rank's vCPU (it shares the physical core or lowers its clock) or its memory stream for a
// whole run, and the ranks' partners then wait for it at every collective, so the run
// measures the host, not the plan. Where the ranks do the same work, the run's profiler
// trace (`twinsim run`'s trace.json) shows it: one rank's compute is far above another's.
// `twinsim validate` drops such runs (compare/suite_run.hpp); scripts/decode_sync.py reads
// the same trace for a 2-rank decode's detail and uses the same cut.
#include <filesystem>
#include <map>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "models/plan.hpp"

namespace twinsim::compare {

// A run whose slowest rank's compute is at least this many times the fastest's is disturbed.
// Measured on the 2-vCPU EPYC guest (issue 61, s15 report 07): of 348 two-rank decode runs,
// 287 had ratios within 1.3; of 26 runs 1.30-2.56x lopsided, 13 had the slow rank's vCPU
// running a register-only loop 1.7x slower (39.6-46.0 us against 21-25 us) and 10 had only
// its GEMMs slower (x1.43-2.77); undisturbed training runs of the DP-2/TP-2/EP-2 cases read
// 1.00-1.09 (s15, 24 runs).
inline constexpr double kSlowRankRatio = 1.3;

// The most extra runs `validate` gives a case to replace its disturbed runs (compare/suite_run):
// at most 2 more runs of each same-work case, 2/3 more of a 3-run suite's time for those cases
// in the worst case; at 61 of 348 runs disturbed, a case's run after the rounds is again
// disturbed about 1 time in 6.
inline constexpr int kMaxExtraRuns = 2;

// Whether every rank of the plan does the same work, so that their compute should agree:
// tensor-, data-, context- and expert-parallel training ranks do (equal shards of the same
// layers; EP ranks hold equal numbers of experts, their routed tokens differing by the router
// only); pipeline stages do not (different layers, and the first and last hold the embedding
// and head), nor do a served model's data-parallel replicas (`serving`): each decodes its own
// requests, and the experts they share see different tokens (the quiet s15 run read the
// DP-2 EP-2 decode at 1.14-2.14 in all 5 runs, where every other case read 1.00-1.12). False
// for one rank.
bool ranks_do_same_work(const Plan& plan, bool serving);

// Whether a trace op waits for other ranks, so that its time holds the partners' lateness as
// well as its own work: the communication ops of compare/kernel_categories.csv, and greedy
// sampling (head.sample holds TP's all-reduces that agree on the token).
bool waits_on_other_ranks(const std::string& op_name);

// Each rank's (the trace's thread id) compute: over the ops that do not wait on other
// ranks, the median call after the first (the warm-up step's, or an inference run's
// prefill), summed: equal work gives equal sums; in the trace's unit (us). Complete events ("ph": "X") only; an op
// called once counts nothing. Throws std::invalid_argument naming `origin` when the JSON holds no events.
std::map<int, double> rank_compute(const nlohmann::json& trace, const std::string& origin);

// Slowest over fastest rank's compute; 0 when the trace has fewer than two ranks (or a rank
// with no compute), which no cut calls disturbed.
double rank_compute_ratio(const std::map<int, double>& compute);

// rank_compute_ratio of the trace file; throws std::runtime_error when it cannot be read.
double trace_rank_ratio(const std::filesystem::path& trace_file);

bool is_disturbed(double rank_ratio, double cut = kSlowRankRatio);

}  // namespace twinsim::compare
