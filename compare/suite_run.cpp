#include "compare/suite_run.hpp"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "io/whole_file.hpp"

namespace twinsim::compare {

namespace fs = std::filesystem;

std::vector<fs::path> suite_cases(const fs::path& suite, const std::string& only) {
  if (!fs::is_directory(suite)) throw std::runtime_error("no suite " + suite.string() + " (looked for from the working directory and the source tree)");
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(suite))
    if (e.path().extension() == ".yaml" && e.path().stem().string().find(only) != std::string::npos)
      files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<fs::path> listed_cases(const fs::path& suite, const std::string& list_file) {
  std::ifstream list(suite / list_file);
  if (!list) throw std::runtime_error("no list " + (suite / list_file).string());
  std::vector<fs::path> files;
  for (std::string line; std::getline(list, line);) {
    line = line.substr(0, line.find('#'));
    const std::size_t start = line.find_first_not_of(" \t"), end = line.find_last_not_of(" \t\r");
    if (start == std::string::npos) continue;
    const fs::path file = suite / (line.substr(start, end - start + 1) + ".yaml");
    if (!fs::is_regular_file(file))
      throw std::runtime_error((suite / list_file).string() + " names " + file.stem().string() + ", which " +
                               suite.string() + " does not hold");
    files.push_back(file);
  }
  std::sort(files.begin(), files.end());
  return files;
}

namespace {

// With several runs a case's files are under run-K/; its median run's are copied up.
void copy_median_run_up(const CaseResult& row, const fs::path& out) {
  const fs::path dir = out / row.name;
  const fs::path from = dir / ("run-" + std::to_string(row.run));
  for (const auto& e : fs::directory_iterator(from))
    if (e.is_regular_file()) fs::copy_file(e.path(), dir / e.path().filename(), fs::copy_options::overwrite_existing);
}

int count_undisturbed(const std::vector<CaseResult>& runs, double cut) {
  return static_cast<int>(
      std::count_if(runs.begin(), runs.end(), [cut](const CaseResult& r) { return !is_disturbed(r.rank_ratio, cut); }));
}

// The case's row: the median of its undisturbed runs (all of them when it keeps the
// disturbed ones or has no other), with every run's rank ratio and the counts.
CaseResult judge_case(std::vector<CaseResult> all, const DisturbedRuns& d) {
  std::vector<double> ratios;
  for (const CaseResult& r : all) ratios.push_back(r.rank_ratio);
  const int disturbed = static_cast<int>(all.size()) - count_undisturbed(all, d.cut);
  std::vector<CaseResult> kept = all;
  if (!d.keep) std::erase_if(kept, [&d](const CaseResult& r) { return is_disturbed(r.rank_ratio, d.cut); });
  const bool none_left = kept.empty();
  if (none_left) kept = all;
  std::vector<int> numbers;
  for (const CaseResult& r : kept) numbers.push_back(r.run);
  CaseResult row = median_run(std::move(kept));
  row.run = numbers.at(static_cast<std::size_t>(row.run - 1));  // median_run numbers from 1 in `kept`
  row.rank_ratio_runs = std::move(ratios);
  row.disturbed_runs = disturbed;
  row.dropped_runs = d.keep || none_left ? 0 : disturbed;
  row.all_runs_disturbed = !d.keep && none_left && disturbed > 0;
  return row;
}

}  // namespace

std::vector<CaseResult> run_suite(const std::vector<fs::path>& cases, const fs::path& out, int runs,
                                  const CaseRunner& run_case, int warmup_runs, const DisturbedRuns& disturbed) {
  if (runs < 1) throw std::invalid_argument("run_suite: runs must be at least 1");
  if (warmup_runs < 0) throw std::invalid_argument("run_suite: warmup_runs must be at least 0");
  for (int w = 0; w < warmup_runs; ++w)
    for (const fs::path& c : cases) run_case(c, out / c.stem() / "warm-up", 0);  // dropped
  std::vector<std::vector<CaseResult>> by_case(cases.size());
  const auto run_number = [&](std::size_t i, int k, const fs::path& dir) {  // case i's run k, in `dir`
    CaseResult r = run_case(cases[i], dir, k);
    r.name = cases[i].stem().string();
    r.run = k;
    by_case[i].push_back(std::move(r));
  };
  const auto run_dir = [&out, &cases](std::size_t i, int k) {
    return out / cases[i].stem() / ("run-" + std::to_string(k));
  };
  for (int k = 1; k <= runs; ++k)
    for (std::size_t i = 0; i < cases.size(); ++i)
      run_number(i, k, runs > 1 ? run_dir(i, k) : out / cases[i].stem() / "");
  // extra rounds, each of the cases still short of `runs` undisturbed runs
  for (int extra = 1; !disturbed.keep && extra <= disturbed.max_extra_runs; ++extra)
    for (std::size_t i = 0; i < cases.size(); ++i)
      if (count_undisturbed(by_case[i], disturbed.cut) < runs) run_number(i, runs + extra, run_dir(i, runs + extra));
  std::vector<CaseResult> rows;
  for (auto& case_runs : by_case) {
    rows.push_back(judge_case(std::move(case_runs), disturbed));
    if ((runs > 1 || rows.back().run > 1) && rows.back().error.empty()) copy_median_run_up(rows.back(), out);
  }
  fs::create_directories(out);
  io::write_file_whole((out / "validate.json").string(), results_json(rows).dump(2) + "\n");
  return rows;
}

}  // namespace twinsim::compare
