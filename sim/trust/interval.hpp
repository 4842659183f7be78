#pragma once
// How far a prediction can be trusted: an 80% interval around it from the held-out error of
// the validation cases of its regime (case_errors.hpp), widened where it extrapolates.
//
// The regime: the most specific of a fixed ladder of groupings (kLevels) in which at least
// kMinCases cases share the scenario's values. Its errors (log ratios) give a weighted mean
// and spread, each source weighing one in all (its cases are one cluster, one stack, one
// author: not independent draws); the interval is the normal prediction interval
// mean +- t(0.90, n_eff - 1) x sd x sqrt(1 + 1/n_eff), n_eff the weights' effective count
// (Kish). Where the regime lacks the scenario's GPU, stack, model kind or parallelism kinds,
// its scale or any case priced beyond the measured tables, the spread between the validated
// values of that dimension (the sd of their mean errors) is added in quadrature, and the
// reason is listed.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "sim/trust/case_errors.hpp"

namespace twinsim::trust {

inline constexpr double kCoverage = 0.80;  // the interval's stated coverage
inline constexpr int kMinCases = 5;        // cases a grouping needs to be a prediction's regime

// What the interval is asked for: the scenario's regime, its GPU count, whether it priced an
// op beyond the measured tables (time.extrapolated_ops).
struct TrustQuery {
  Regime regime;
  long long gpus = 0;
  bool extrapolated = false;
};

struct TrustInterval {
  double low = 0, high = 0;  // the measured value's 80% interval, in the predicted value's units
  double half_width = 0;     // (high - low) / 2 / predicted
  double bias = 0;           // the regime's mean log ratio: > 0, the simulator runs slow there
  std::string regime;        // the grouping that served, e.g. "training a100 megatron-eager dense"
  std::string level;         // its dimensions, e.g. "workload+gpu+stack+model"
  int cases = 0;             // validation cases in it
  int sources = 0;
  double effective_cases = 0;
  bool validated = true;     // false: no case shares its workload, GPU, stack and model kind
  std::vector<std::string> reasons;  // why it is as wide as it is
};

// The interval of a time predicted as `predicted` (a step, a TTFT, a TPOT) from `cases`.
TrustInterval trust_interval(const std::vector<CaseError>& cases, const TrustQuery& query, double predicted);

// {"low", "high"} and the basis object of SCENARIO.md (time.step_s_interval, time.interval_basis).
nlohmann::json interval_json(const TrustInterval& t);
nlohmann::json basis_json(const TrustInterval& t);

// Leave-one-out check of the intervals: each case judged by the interval of all the others.
struct CoverageRow {
  std::string regime;   // the grouping (workload gpu stack model) the cases belong to
  int cases = 0;
  int covered = 0;
  double median_half_width = 0;
};
struct Coverage {
  CoverageRow overall;
  std::vector<CoverageRow> by_regime;
};
Coverage leave_one_out_coverage(const std::vector<CaseError>& cases);
std::string coverage_table(const Coverage& c);

}  // namespace twinsim::trust
