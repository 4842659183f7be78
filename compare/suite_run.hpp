#pragma once
// Running a validation suite (`twinsim validate`): the suite's cases in name order, the
// whole suite `runs` times one after another (so a slow spell of a shared machine falls
// on every case alike rather than on one), each case judged by its median run
// (suite_results.hpp), and the results written to OUT/validate.json. How one case is
// simulated and run is the caller's (the command starts twinsim and mpirun as child
// processes; a test passes a function), so this part is reachable without either.
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "compare/rank_balance.hpp"
#include "compare/suite_results.hpp"

namespace twinsim::compare {

// Runs one case: the suite's scenario file, the folder for its files, the run (from 1; 0
// for a warm-up round, whose result is dropped).
using CaseRunner =
    std::function<CaseResult(const std::filesystem::path& scenario, const std::filesystem::path& dir, int run)>;

// The suite folder's *.yaml files whose name (less .yaml) contains `only`, sorted.
// Throws std::runtime_error when the folder does not exist.
std::vector<std::filesystem::path> suite_cases(const std::filesystem::path& suite, const std::string& only);

// The cases a list file of the suite folder names (one case name a line, less .yaml; `#`
// starts a comment), in name order: `validate --quick` runs the suite's quick.txt. Throws
// std::runtime_error when the file or a case it names is missing.
std::vector<std::filesystem::path> listed_cases(const std::filesystem::path& suite, const std::string& list_file);

// Runs every case `runs` times into OUT/NAME (OUT/NAME/run-K with several runs, the median
// run's files then copied up to OUT/NAME), writes OUT/validate.json and returns one row per
// case, in the order of `cases`. First, `warmup_runs` whole rounds whose results are dropped
// (run 0, into OUT/NAME/warm-up): on the lead's quiet 2-vCPU guest (issue 61, s11) the
// suite's first round ran 1.1-1.6x slower than its second and third in 13 and 15 of the
// 20-21 unsteady cases of two validates, while rounds 2 and 3 agreed within 2-5% on most
// training cases.
//
// A run whose rank_ratio is at or above `disturbed.cut` (compare/rank_balance.hpp: the host
// slowed one rank) is counted; unless `disturbed.keep`, each case short of `runs`
// undisturbed runs gets up to `disturbed.max_extra_runs` more (run runs+1, ..., after the
// rounds, one extra round of the cases that need one at a time), and is judged by the median
// of its undisturbed runs; with none, by all of them, marked all_runs_disturbed.
struct DisturbedRuns {
  double cut = kSlowRankRatio;
  int max_extra_runs = kMaxExtraRuns;
  bool keep = false;  // `validate --keep-disturbed`: count them, rerun and drop nothing
};
std::vector<CaseResult> run_suite(const std::vector<std::filesystem::path>& cases, const std::filesystem::path& out,
                                  int runs, const CaseRunner& run_case, int warmup_runs = 0,
                                  const DisturbedRuns& disturbed = {});

}  // namespace twinsim::compare
