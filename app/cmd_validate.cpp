// `twinsim validate [--suite NAME] [--hardware FILE]`: for every scenario of
// scenarios/validation/NAME/ (default `host`), on the calibrated host (the scenario's
// `cluster:` replaced by hardware/calibrated/host.yaml), simulate it, run it under
// `mpirun -np WORLD`, compare the two reports and print one table. Worlds within this
// machine's cores are timing cases; larger ones (oversubscribed) are compared on memory.
// A training case is timed by its step; an inference case (prefill + decode) by its TPOT
// (time per output token: one decode pass), its TTFT listed under the table.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "app/child_process.hpp"
#include "app/cli_checks.hpp"
#include "app/commands.hpp"
#include "compare/comparison.hpp"
#include "scenario/load.hpp"
#include "io/whole_file.hpp"

namespace twinsim {

namespace {

namespace fs = std::filesystem;

struct ValidateArgs {
  std::string suite = "host";
  std::string hardware = "hardware/calibrated/host.yaml";
  std::string out = "validate-out";
  std::string only;  // run only scenarios whose name contains this
  std::string twinsim;  // binary for simulate and run; empty: this one
  int steps = 6;
  int runs = 3;      // runs of the suite; each case keeps its median run
  int cores = 0;     // 0: this machine's
  double memory_target = 0.03, step_target = 0.15, median_target = 0.07;  // issue 7's targets
  bool json = false;
};

struct CaseResult {
  std::string name;
  int world = 0;
  bool timing = false;
  std::string error;  // non-empty: the case did not run
  compare::Comparison cmp;
  std::string worst_category;  // largest |relative error| of memory per category
  double worst_category_err = 0;     // its |relative error|
  double worst_category_signed = 0;  // the same, signed (negative: under-predicted)
  std::string load;  // load average before the run
  std::vector<double> measured_runs;  // the timed value (step or TPOT) of every run, in order
  int run = 1;                        // which of them this result is (from 1)
};

std::string load_average() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  f >> a >> b >> c;
  return a + " " + b + " " + c;
}

nlohmann::json read_json(const fs::path& p) {
  std::ifstream f(p);
  if (!f) throw std::runtime_error("cannot read " + p.string());
  return nlohmann::json::parse(f);
}

// Runs argv with its stderr (and its stdout, unless `stdout_to` is given) in `log`.
void run_logged(const std::vector<std::string>& argv, const fs::path& log, const fs::path& stdout_to = {}) {
  const ChildOutput out = stdout_to.empty() ? ChildOutput{log, {}, true} : ChildOutput{stdout_to, log, false};
  if (run_child(argv, out) != 0)
    throw std::runtime_error("failed: " + describe_command(argv) + " (log: " + log.string() + ")");
}

// The suite's scenario with its cluster replaced by the calibrated hardware file.
fs::path calibrated_scenario(const fs::path& src, const ValidateArgs& a, const fs::path& dir) {
  YAML::Node s = YAML::LoadFile(src.string());
  if (fs::exists(a.hardware)) s["cluster"] = YAML::LoadFile(a.hardware);
  const fs::path out = dir / "scenario.yaml";
  io::write_file_whole(out.string(), [&](std::ostream& f) { f << "# " << src.string() << " on " << a.hardware << "\n" << s << "\n"; });
  return out;
}

void worst_memory_category(CaseResult& r) {
  for (const compare::NamedPair& p : r.cmp.memory) {
    const double e = std::abs(p.value.rel_error());
    if (p.value.predicted == 0 && p.value.measured == 0) continue;
    if (r.worst_category.empty() || e > r.worst_category_err) {
      r.worst_category = p.name;
      r.worst_category_err = e;
      r.worst_category_signed = p.value.rel_error();
    }
  }
}

CaseResult run_case(const fs::path& src, const ValidateArgs& a, int cores, const fs::path& dir) {
  CaseResult r;
  r.name = src.stem().string();
  r.load = load_average();
  fs::create_directories(dir);
  try {
    const fs::path scenario = calibrated_scenario(src, a, dir);
    r.world = static_cast<int>(load_scenario_file(scenario.string()).plan.world_size());
    r.timing = r.world <= cores;
    const std::string self = a.twinsim.empty() ? self_executable().string() : a.twinsim;
    run_logged({self, "simulate", scenario.string(), "--json"}, dir / "simulate.log", dir / "simulated.json");
    std::vector<std::string> mpirun = mpirun_argv(r.world);
    mpirun.insert(mpirun.end(), {self, "run", scenario.string(), "--steps", std::to_string(a.steps), "--out",
                                 dir.string()});
    run_logged(mpirun, dir / "run.log");
    r.cmp = compare::compare_reports(read_json(dir / "simulated.json"), read_json(dir / "measured.json"));
    io::write_file_whole((dir / "comparison.json").string(), compare::to_json(r.cmp).dump(2) + "\n");
    io::write_file_whole((dir / "comparison.txt").string(), compare::format_comparison(r.cmp));
    worst_memory_category(r);
  } catch (const std::exception& e) {
    r.error = e.what();
  }
  return r;
}

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string pct(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%+.1f%%", 100 * x);
  return b;
}

bool memory_ok(const CaseResult& r, const ValidateArgs& a) {
  return r.error.empty() && std::abs(r.cmp.peak_bytes.rel_error()) <= a.memory_target &&
         r.worst_category_err <= a.memory_target;
}

// The time a case is judged by: the step (training) or TPOT (inference).
const compare::Pair& timed(const CaseResult& r) { return r.cmp.step_or_tpot_s(); }

// Of one case's runs, the one whose measured time is the median (the lower middle of an
// even count); a run that failed is reported instead. The others' times are kept.
CaseResult median_run(std::vector<CaseResult> runs) {
  for (std::size_t i = 0; i < runs.size(); ++i)
    if (!runs[i].error.empty()) {
      runs[i].run = static_cast<int>(i) + 1;
      return runs[i];
    }
  std::vector<double> measured;
  for (const CaseResult& r : runs) measured.push_back(timed(r).measured);
  std::vector<std::size_t> order(runs.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return measured[x] < measured[y]; });
  const std::size_t pick = order[(order.size() - 1) / 2];
  CaseResult median = runs[pick];
  median.measured_runs = measured;
  median.run = static_cast<int>(pick) + 1;
  return median;
}

// (max - min) / median of the measured times over the runs; 0 for one run.
double run_spread(const CaseResult& r) {
  if (r.measured_runs.size() < 2) return 0;
  const auto [lo, hi] = std::minmax_element(r.measured_runs.begin(), r.measured_runs.end());
  return (*hi - *lo) / timed(r).measured;
}

bool step_ok(const CaseResult& r, const ValidateArgs& a) {
  return !r.timing || (r.error.empty() && std::abs(timed(r).rel_error()) <= a.step_target);
}

// TTFT and TPOT of the inference cases, below the table.
void print_inference_cases(const std::vector<CaseResult>& rows) {
  bool any = false;
  for (const CaseResult& r : rows) {
    if (!r.error.empty() || !r.cmp.inference) continue;
    if (!any) std::printf("\ninference cases (metric TPOT: predicted mean decode pass, measured median decode step)\n");
    any = true;
    const compare::InferenceComparison& inf = *r.cmp.inference;
    std::printf("  %-26s TTFT %9.4fs pred %9.4fs meas %8s   TPOT %9.4fs pred %9.4fs meas %8s\n", r.name.c_str(),
                inf.ttft_s.predicted, inf.ttft_s.measured, pct(inf.ttft_s.rel_error()).c_str(), inf.tpot_s.predicted,
                inf.tpot_s.measured, pct(inf.tpot_s.rel_error()).c_str());
  }
}

void print_table(const std::vector<CaseResult>& rows, const ValidateArgs& a) {
  std::printf("%-28s %5s %-6s %10s %10s %8s %7s %9s %9s %8s %-22s %-15s %s\n", "case", "ranks", "metric", "step pred",
              "step meas", "step err", "spread", "peak pred", "peak meas", "peak err", "worst category", "load avg", "ok");
  std::vector<double> step_errs;
  bool all_ok = true;
  for (const CaseResult& r : rows) {
    if (!r.error.empty()) {
      std::printf("%-28s %5d  error: %s\n", r.name.c_str(), r.world, r.error.c_str());
      all_ok = false;
      continue;
    }
    const bool ok = memory_ok(r, a) && step_ok(r, a);
    all_ok = all_ok && ok;
    if (r.timing) step_errs.push_back(std::abs(timed(r).rel_error()));
    const std::string step_err = r.timing ? pct(timed(r).rel_error()) : "(mem)";
    const std::string worst = r.worst_category + " " + pct(r.worst_category_signed);
    char spread[16];
    std::snprintf(spread, sizeof spread, "%.0f%%", 100 * run_spread(r));
    std::printf("%-28s %5d %-6s %9.4fs %9.4fs %8s %7s %8.2fM %8.2fM %8s %-22s %-15s %s\n", r.name.c_str(), r.world,
                r.cmp.step_or_tpot_name(), timed(r).predicted, timed(r).measured, step_err.c_str(), spread,
                r.cmp.peak_bytes.predicted / 1048576,
                r.cmp.peak_bytes.measured / 1048576, pct(r.cmp.peak_bytes.rel_error()).c_str(), worst.c_str(),
                r.load.c_str(), ok ? "yes" : "NO");
  }
  print_inference_cases(rows);
  const double med = median_of(step_errs);
  all_ok = all_ok && med <= a.median_target;
  std::printf("\ntiming cases: %zu, median |step error| %.1f%% (target %.0f%%); targets: memory within %.0f%% per "
              "category, step within %.0f%%: %s\n"
              "(step error: the training step's, or TPOT's for an inference case, as the metric column says;\n"
              " each case's median of %d runs of the suite, spread = (max - min) / median of the measured)\n",
              step_errs.size(), 100 * med, 100 * a.median_target, 100 * a.memory_target, 100 * a.step_target,
              all_ok ? "all met" : "NOT all met", a.runs);
}

nlohmann::json results_json(const std::vector<CaseResult>& rows) {
  nlohmann::json j = nlohmann::json::array();
  for (const CaseResult& r : rows) {
    nlohmann::json c{{"name", r.name}, {"ranks", r.world}, {"timing", r.timing}, {"load_average", r.load}};
    // the measured step (or TPOT) of every run of the suite; `comparison` is the median run's
    if (!r.measured_runs.empty()) c["measured_runs_s"] = r.measured_runs;
    // the time the case is judged by: "step" (training) or "tpot" (inference)
    if (r.error.empty()) c["metric"] = r.cmp.inference ? "tpot" : "step";
    if (!r.error.empty())
      c["error"] = r.error;
    else
      c["comparison"] = compare::to_json(r.cmp);
    j.push_back(c);
  }
  return j;
}

void run_validate(const ValidateArgs& a) {
  const fs::path suite = fs::path("scenarios/validation") / a.suite;
  if (!fs::is_directory(suite)) throw std::runtime_error("no suite " + suite.string() + " (run from the repository root)");
  if (!fs::exists(a.hardware))
    std::cerr << "validate: " << a.hardware << " is missing, the scenarios' own clusters are used "
              << "(run `twinsim calibrate --out " << a.hardware << "` first)\n";
  const int cores = a.cores > 0 ? a.cores : static_cast<int>(std::thread::hardware_concurrency());
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(suite))
    if (e.path().extension() == ".yaml" && e.path().stem().string().find(a.only) != std::string::npos)
      files.push_back(e.path());
  std::sort(files.begin(), files.end());
  // Whole-suite runs one after another, so that a slow spell of a shared machine falls on
  // every case alike rather than on one; with several, a case's files are under run-K/
  // and its median run's are copied up to its own folder.
  std::vector<std::vector<CaseResult>> runs(files.size());
  for (int k = 1; k <= a.runs; ++k)
    for (std::size_t i = 0; i < files.size(); ++i) {
      const std::string name = files[i].stem().string();
      std::cerr << "validate: " << name << (a.runs > 1 ? " run " + std::to_string(k) : "") << " (load "
                << load_average() << ")\n";
      const fs::path dir = fs::path(a.out) / name / (a.runs > 1 ? "run-" + std::to_string(k) : "");
      runs[i].push_back(run_case(files[i], a, cores, dir));
    }
  std::vector<CaseResult> rows;
  for (std::size_t i = 0; i < files.size(); ++i) {
    rows.push_back(median_run(runs[i]));
    if (a.runs < 2 || !rows.back().error.empty()) continue;
    const fs::path dir = fs::path(a.out) / rows.back().name;
    const fs::path from = dir / ("run-" + std::to_string(rows.back().run));
    for (const auto& e : fs::directory_iterator(from))
      if (e.is_regular_file()) fs::copy_file(e.path(), dir / e.path().filename(), fs::copy_options::overwrite_existing);
  }
  io::write_file_whole((fs::path(a.out) / "validate.json").string(), results_json(rows).dump(2) + "\n");
  if (a.json)
    std::cout << results_json(rows).dump(2) << "\n";
  else
    print_table(rows, a);
}

}  // namespace

void add_validate_command(CLI::App& app) {
  auto a = std::make_shared<ValidateArgs>();
  CLI::App* cmd = app.add_subcommand("validate", "simulate, run and compare a suite of plans on the calibrated host");
  cmd->add_option("--suite", a->suite, "folder under scenarios/validation/ (default host)");
  cmd->add_option("--hardware", a->hardware, "calibrated hardware file that replaces each scenario's cluster");
  cmd->add_option("--out", a->out, "folder for each case's scenario, reports and comparison");
  cmd->add_option("--only", a->only, "run only the cases whose name contains this");
  cmd->add_option("--steps", a->steps, "training steps per run (the first is a warm-up)")->check(cli::whole(2, 1000));
  cmd->add_option("--runs", a->runs, "runs of the whole suite; each case is judged by its median run (default 3)")
      ->check(cli::whole(1, 100));
  cmd->add_option("--cores", a->cores, "worlds up to this many ranks are timing cases (default: this machine's cores)");
  cmd->add_option("--twinsim", a->twinsim, "twinsim binary that simulates and runs each case (default: this one)");
  cmd->add_flag("--json", a->json, "print the results as JSON");
  cmd->callback([a] { run_validate(*a); });
}

}  // namespace twinsim
