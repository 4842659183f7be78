#include "compare/suite_results.hpp"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "compare/rank_balance.hpp"

namespace twinsim::compare {

void worst_memory_category(CaseResult& r) {
  for (const NamedPair& p : r.cmp.memory) {
    const double e = std::abs(p.value.rel_error());
    if (p.value.predicted == 0 && p.value.measured == 0) continue;
    if (r.worst_category.empty() || e > r.worst_category_err) {
      r.worst_category = p.name;
      r.worst_category_err = e;
      r.worst_category_signed = p.value.rel_error();
    }
  }
}

static double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static std::string pct(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%+.1f%%", 100 * x);
  return b;
}

bool memory_ok(const CaseResult& r, const SuiteTargets& t) {
  return r.error.empty() && std::abs(r.cmp.peak_bytes.rel_error()) <= t.memory &&
         r.worst_category_err <= t.memory;
}

// The time a case is judged by: the step (training) or TPOT (inference).
static const Pair& timed(const CaseResult& r) { return r.cmp.step_or_tpot_s(); }

// Of one case's runs, the one whose measured time is the median (the lower middle of an
// even count); a run that failed is reported instead. The others' times are kept.
CaseResult median_run(std::vector<CaseResult> runs) {
  for (std::size_t i = 0; i < runs.size(); ++i)
    if (!runs[i].error.empty()) {
      runs[i].run = static_cast<int>(i) + 1;
      return runs[i];
    }
  std::vector<double> measured, others;
  for (const CaseResult& r : runs) {
    measured.push_back(timed(r).measured);
    others.push_back(r.other_cores + r.steal_cores);
  }
  std::vector<std::size_t> order(runs.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return measured[x] < measured[y]; });
  const std::size_t pick = order[(order.size() - 1) / 2];
  CaseResult median = runs[pick];
  median.measured_runs = measured;
  median.others_runs = others;
  median.run = static_cast<int>(pick) + 1;
  return median;
}

// (max - min) / median of the measured times over the runs; 0 for one run.
double run_spread(const CaseResult& r) {
  if (r.measured_runs.size() < 2) return 0;
  const auto [lo, hi] = std::minmax_element(r.measured_runs.begin(), r.measured_runs.end());
  return (*hi - *lo) / timed(r).measured;
}

bool step_ok(const CaseResult& r, const SuiteTargets& t) {
  return !r.timing || (r.error.empty() && std::abs(timed(r).rel_error()) <= t.step);
}

bool too_unsteady(const CaseResult& r, const SuiteTargets& t) {
  return r.timing && r.error.empty() && r.measured_runs.size() >= 2 && run_spread(r) > t.spread;
}

double most_others(const CaseResult& r) {
  if (r.others_runs.empty()) return r.other_cores + r.steal_cores;
  return *std::max_element(r.others_runs.begin(), r.others_runs.end());
}

bool disturbed(const CaseResult& r, const SuiteTargets& t) {
  return r.timing && r.error.empty() && most_others(r) > t.others;
}

bool host_disturbed(const CaseResult& r) { return r.timing && r.error.empty() && r.all_runs_disturbed; }

// TTFT and TPOT of the inference cases, below the table.
static void print_inference_cases(std::FILE* out, const std::vector<CaseResult>& rows) {
  bool any = false;
  for (const CaseResult& r : rows) {
    if (!r.error.empty() || !r.cmp.inference) continue;
    if (!any) std::fprintf(out, "\ninference cases (metric TPOT: predicted mean decode pass, measured median decode step)\n");
    any = true;
    const InferenceComparison& inf = *r.cmp.inference;
    std::fprintf(out, "  %-26s TTFT %9.4fs pred %9.4fs meas %8s   TPOT %9.4fs pred %9.4fs meas %8s\n", r.name.c_str(),
                inf.ttft_s.predicted, inf.ttft_s.measured, pct(inf.ttft_s.rel_error()).c_str(), inf.tpot_s.predicted,
                inf.tpot_s.measured, pct(inf.tpot_s.rel_error()).c_str());
  }
}

// A case's ok column: memory failed ("NO"); its step not judged because other work shared the
// machine during a run ("busy"), the host slowed one rank in every run ("slowrank") or the runs
// spread too far ("unsteady"); else the step's verdict.
static const char* verdict(const CaseResult& r, const SuiteTargets& t) {
  if (!memory_ok(r, t)) return "NO";
  if (host_disturbed(r)) return "slowrank";
  if (disturbed(r, t)) return "busy";
  if (too_unsteady(r, t)) return "unsteady";
  return step_ok(r, t) ? "yes" : "NO";
}

static void print_row(std::FILE* out, const CaseResult& r, const SuiteTargets& t) {
  const std::string step_err = r.timing ? pct(timed(r).rel_error()) : "(mem)";
  const std::string worst = r.worst_category + " " + pct(r.worst_category_signed);
  char spread[16];
  std::snprintf(spread, sizeof spread, "%.0f%%", 100 * run_spread(r));
  std::fprintf(out, "%-28s %5d %-6s %9.4fs %9.4fs %8s %7s %8.2fM %8.2fM %8s %-22s %-15s %6.2f %s", r.name.c_str(),
               r.world, r.cmp.step_or_tpot_name(), timed(r).predicted, timed(r).measured, step_err.c_str(), spread,
               r.cmp.peak_bytes.predicted / 1048576, r.cmp.peak_bytes.measured / 1048576,
               pct(r.cmp.peak_bytes.rel_error()).c_str(), worst.c_str(), r.load.c_str(), most_others(r), verdict(r, t));
  if (r.disturbed_runs > 0)  // after the last column, so that the columns before it stay
    std::fprintf(out, "  (%d of %zu runs one rank >= %.1fx slower; %d dropped)", r.disturbed_runs,
                 r.rank_ratio_runs.size(), kSlowRankRatio, r.dropped_runs);
  std::fprintf(out, "\n");
}

void print_results(std::FILE* out, const std::vector<CaseResult>& rows, const SuiteTargets& t, int runs) {
  std::fprintf(out, "%-28s %5s %-6s %10s %10s %8s %7s %9s %9s %8s %-22s %-15s %6s %s\n", "case", "ranks", "metric",
               "step pred", "step meas", "step err", "spread", "peak pred", "peak meas", "peak err", "worst category",
               "load avg", "others", "ok");
  std::vector<double> step_errs, judged_errs;
  bool all_ok = true;
  int busy = 0, unsteady = 0, slowrank = 0, dropped = 0;
  for (const CaseResult& r : rows) {
    if (!r.error.empty()) {
      std::fprintf(out, "%-28s %5d  error: %s\n", r.name.c_str(), r.world, r.error.c_str());
      all_ok = false;
      continue;
    }
    // a busy or unsteady case's step is not judged; its memory still is
    const std::string v = verdict(r, t);
    all_ok = all_ok && v != "NO";
    busy += v == "busy";
    unsteady += v == "unsteady";
    slowrank += v == "slowrank";
    dropped += r.dropped_runs > 0;
    if (r.timing) step_errs.push_back(std::abs(timed(r).rel_error()));
    if (r.timing && !disturbed(r, t) && !too_unsteady(r, t) && !host_disturbed(r))
      judged_errs.push_back(std::abs(timed(r).rel_error()));
    print_row(out, r, t);
  }
  print_inference_cases(out, rows);
  const double med = median_of(step_errs);
  all_ok = all_ok && med <= t.median && busy + unsteady + slowrank == 0;
  std::fprintf(out, "\ntiming cases: %zu, median |step error| %.1f%% (target %.0f%%); targets: memory within %.0f%% per "
              "category, step within %.0f%%: %s\n",
              step_errs.size(), 100 * med, 100 * t.median, 100 * t.memory, 100 * t.step,
              all_ok ? "all met" : "NOT all met");
  if (busy > 0)
    std::fprintf(out,
                 "%d timing case(s) ran beside other work (over %.2f cores in a run, column 'others': the most CPU "
                 "other processes and guests took during one of its runs; ok column 'busy'): the machine's state, not "
                 "judged\n",
                 busy, t.others);
  if (unsteady > 0)
    std::fprintf(out, "%d timing case(s) too unsteady to judge (spread over %.0f%%, ok column 'unsteady')\n", unsteady,
                 100 * t.spread);
  if (dropped > 0)
    std::fprintf(out,
                 "%d case(s) judged without the runs in which one rank's compute was >= %.1fx another's (the host "
                 "slowed that rank's vCPU or memory; rerun up to %d more times, `--keep-disturbed` keeps them)\n",
                 dropped, kSlowRankRatio, kMaxExtraRuns);
  if (slowrank > 0)
    std::fprintf(out,
                 "%d timing case(s) had one rank >= %.1fx slower than another in every run (ok column 'slowrank'): "
                 "the host's state; they cannot be judged on this machine now\n",
                 slowrank, kSlowRankRatio);
  if (busy + unsteady + slowrank > 0)
    std::fprintf(out, "the %zu judged ones: median |step error| %.1f%%\n", judged_errs.size(),
                 100 * median_of(judged_errs));
  std::fprintf(out, "(step error: the training step's, or TPOT's for an inference case, as the metric column says;\n"
              " each case's median of %d runs of the suite, spread = (max - min) / median of the measured)\n", runs);
}

nlohmann::json results_json(const std::vector<CaseResult>& rows) {
  nlohmann::json j = nlohmann::json::array();
  for (const CaseResult& r : rows) {
    nlohmann::json c{{"name", r.name}, {"ranks", r.world}, {"timing", r.timing}, {"load_average", r.load}};
    // the measured step (or TPOT) of every run of the suite; `comparison` is the median run's
    if (!r.measured_runs.empty()) c["measured_runs_s"] = r.measured_runs;
    // the time the case is judged by: "step" (training) or "tpot" (inference)
    if (r.error.empty()) c["metric"] = r.cmp.inference ? "tpot" : "step";
    // (max - min) / median of the measured value over the runs; 0 with one run
    if (r.error.empty()) c["spread"] = run_spread(r);
    // cores' worth of CPU other processes and guests took during each run (calibrate/cpu_share.hpp)
    if (!r.others_runs.empty()) c["others_cores_runs"] = r.others_runs;
    // slowest over fastest rank's compute in every run, extra runs included (0: not measured);
    // how many were at or above the cut, how many the case was judged without, and whether
    // every run was (the case then is not judged)
    if (std::any_of(r.rank_ratio_runs.begin(), r.rank_ratio_runs.end(), [](double x) { return x > 0; })) {
      c["rank_ratio_runs"] = r.rank_ratio_runs;
      c["disturbed_runs"] = r.disturbed_runs;
      c["dropped_runs"] = r.dropped_runs;
      c["all_runs_disturbed"] = r.all_runs_disturbed;
    }
    if (!r.error.empty())
      c["error"] = r.error;
    else
      c["comparison"] = to_json(r.cmp);
    j.push_back(c);
  }
  return j;
}

}  // namespace twinsim::compare
