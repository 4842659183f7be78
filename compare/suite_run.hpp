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

#include "compare/suite_results.hpp"

namespace twinsim::compare {

// Runs one case: the suite's scenario file, the folder for its files, the run (from 1).
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
// case, in the order of `cases`.
std::vector<CaseResult> run_suite(const std::vector<std::filesystem::path>& cases, const std::filesystem::path& out,
                                  int runs, const CaseRunner& run_case);

}  // namespace twinsim::compare
