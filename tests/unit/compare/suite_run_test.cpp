// Running a validation suite (compare/suite_run) with a stand-in for simulate + mpirun:
// which cases run, in what order and how often, where their files go, which run is kept.
#include "compare/suite_run.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <map>

namespace twinsim::compare {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("twinsim_suite_run_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void touch(const fs::path& p, const std::string& text = "") { std::ofstream(p) << text; }

TEST(SuiteRun, CasesAreTheSuitesYamlFilesFilteredAndSorted) {
  const fs::path suite = fresh_dir("cases");
  for (const char* f : {"b-tp2.yaml", "a-dp2.yaml", "c-dp4.yaml", "notes.md"}) touch(suite / f);
  EXPECT_EQ(suite_cases(suite, ""), (std::vector<fs::path>{suite / "a-dp2.yaml", suite / "b-tp2.yaml", suite / "c-dp4.yaml"}));
  EXPECT_EQ(suite_cases(suite, "dp"), (std::vector<fs::path>{suite / "a-dp2.yaml", suite / "c-dp4.yaml"}));
  EXPECT_THROW(suite_cases(suite / "missing", ""), std::runtime_error);
  fs::remove_all(suite);
}

TEST(SuiteRun, EachCaseRunsOncePerRoundAndKeepsItsMedianRunsFiles) {
  const fs::path out = fresh_dir("runs");
  const std::vector<fs::path> cases{"suite/a.yaml", "suite/b.yaml"};
  // measured steps by (case, run): a 1.3 1.0 1.2 -> median run 3 (1.2); b fails in run 2
  const std::map<std::pair<std::string, int>, double> measured{
      {{"a", 1}, 1.3}, {{"a", 2}, 1.0}, {{"a", 3}, 1.2}, {{"b", 1}, 2.0}, {{"b", 2}, 0}, {{"b", 3}, 2.1}};
  std::vector<std::string> order;
  const auto rows = run_suite(cases, out, 3, [&](const fs::path& src, const fs::path& dir, int k) {
    const std::string name = src.stem().string();
    order.push_back(name + std::to_string(k));
    EXPECT_EQ(dir, out / name / ("run-" + std::to_string(k)));
    fs::create_directories(dir);
    touch(dir / "measured.json", "run " + std::to_string(k));
    CaseResult r;
    r.timing = true;
    r.cmp.step_s = {1.0, measured.at({name, k})};
    if (name == "b" && k == 2) r.error = "mpirun failed";
    return r;
  });
  // whole rounds one after another, not one case's runs back to back
  EXPECT_EQ(order, (std::vector<std::string>{"a1", "b1", "a2", "b2", "a3", "b3"}));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].name, "a");
  EXPECT_EQ(rows[0].run, 3);
  EXPECT_DOUBLE_EQ(rows[0].cmp.step_s.measured, 1.2);
  std::ifstream kept(out / "a" / "measured.json");
  std::string text;
  std::getline(kept, text);
  EXPECT_EQ(text, "run 3");  // the median run's file, copied up
  EXPECT_EQ(rows[1].error, "mpirun failed");
  EXPECT_FALSE(fs::exists(out / "b" / "measured.json"));  // a failed case has no median to copy
  EXPECT_TRUE(fs::exists(out / "validate.json"));
  fs::remove_all(out);
}

TEST(SuiteRun, WarmUpRoundsRunFirstAndAreDropped) {
  const fs::path out = fresh_dir("warm");
  const std::vector<fs::path> cases{"suite/a.yaml", "suite/b.yaml"};
  std::vector<std::string> order;
  // the warm-up round measures 9.0 (a slow first round); the timed runs 1.2 1.1 1.0
  const std::map<int, double> measured{{0, 9.0}, {1, 1.2}, {2, 1.1}, {3, 1.0}};
  const auto rows = run_suite(
      cases, out, 3,
      [&](const fs::path& src, const fs::path& dir, int k) {
        const std::string name = src.stem().string();
        order.push_back(name + std::to_string(k));
        EXPECT_EQ(dir, k == 0 ? out / name / "warm-up" : out / name / ("run-" + std::to_string(k)));
        fs::create_directories(dir);
        CaseResult r;
        r.timing = true;
        r.cmp.step_s = {1.0, measured.at(k)};
        return r;
      },
      1);
  // one whole warm-up round (run 0) before the timed rounds
  EXPECT_EQ(order, (std::vector<std::string>{"a0", "b0", "a1", "b1", "a2", "b2", "a3", "b3"}));
  ASSERT_EQ(rows.size(), 2u);
  // the kept runs are the 3 timed ones: 1.2 1.1 1.0, median 1.1 (run 2); the 9.0 is nowhere
  EXPECT_EQ(rows[0].measured_runs, (std::vector<double>{1.2, 1.1, 1.0}));
  EXPECT_EQ(rows[0].run, 2);
  EXPECT_THROW(run_suite(cases, out, 3, nullptr, -1), std::invalid_argument);
  fs::remove_all(out);
}

TEST(SuiteRun, OneRunWritesStraightIntoTheCasesFolder) {
  const fs::path out = fresh_dir("one");
  const auto rows = run_suite({"x/only.yaml"}, out, 1, [&](const fs::path&, const fs::path& dir, int) {
    EXPECT_EQ(dir, out / "only" / "");
    CaseResult r;
    r.cmp.step_s = {1.0, 1.0};
    return r;
  });
  EXPECT_EQ(rows.at(0).run, 1);
  EXPECT_THROW(run_suite({"x/only.yaml"}, out, 0, nullptr), std::invalid_argument);
  fs::remove_all(out);
}

// Rank ratios by (case, run), runs 4 and 5 being the extra ones after the 3 rounds:
//   a: 1.0 1.5 1.1 | 1.2      -> run 2 disturbed (1.5 >= 1.3); one extra run (4) makes 3
//      undisturbed, so no run 5; judged by runs 1, 3, 4: steps 1.0 1.2 1.1 -> median 1.1 (run 4)
//   b: 1.6 1.4 1.3 | 1.5 1.7  -> every run at or above 1.3: both extras run, none is kept
//   c: 0 0 0 (one rank: not measured) -> no extra run, nothing dropped
const std::map<std::pair<std::string, int>, double> kRatio{
    {{"a", 1}, 1.0}, {{"a", 2}, 1.5}, {{"a", 3}, 1.1}, {{"a", 4}, 1.2}, {{"b", 1}, 1.6}, {{"b", 2}, 1.4},
    {{"b", 3}, 1.3}, {{"b", 4}, 1.5}, {{"b", 5}, 1.7}, {{"c", 1}, 0},   {{"c", 2}, 0},   {{"c", 3}, 0}};
const std::map<std::pair<std::string, int>, double> kStep{
    {{"a", 1}, 1.0}, {{"a", 2}, 3.0}, {{"a", 3}, 1.2}, {{"a", 4}, 1.1}, {{"b", 1}, 2.0}, {{"b", 2}, 2.4},
    {{"b", 3}, 2.2}, {{"b", 4}, 2.6}, {{"b", 5}, 2.8}, {{"c", 1}, 1.0}, {{"c", 2}, 1.0}, {{"c", 3}, 1.0}};

std::vector<CaseResult> run_rated_suite(const fs::path& out, const DisturbedRuns& d, std::vector<std::string>& order) {
  return run_suite(
      {"s/a.yaml", "s/b.yaml", "s/c.yaml"}, out, 3,
      [&](const fs::path& src, const fs::path& dir, int k) {
        const std::string name = src.stem().string();
        order.push_back(name + std::to_string(k));
        EXPECT_EQ(dir, out / name / ("run-" + std::to_string(k)));
        fs::create_directories(dir);
        touch(dir / "measured.json", "run " + std::to_string(k));
        CaseResult r;
        r.timing = true;
        r.cmp.step_s = {1.0, kStep.at({name, k})};
        r.rank_ratio = kRatio.at({name, k});
        return r;
      },
      0, d);
}

TEST(SuiteRun, DisturbedRunsAreRerunAfterTheRoundsAndDropped) {
  const fs::path out = fresh_dir("disturbed");
  std::vector<std::string> order;
  const auto rows = run_rated_suite(out, {}, order);
  // the rounds, then extra round 4 (a and b short of 3 undisturbed), then round 5 (b only)
  EXPECT_EQ(order, (std::vector<std::string>{"a1", "b1", "c1", "a2", "b2", "c2", "a3", "b3", "c3", "a4", "b4", "b5"}));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].measured_runs, (std::vector<double>{1.0, 1.2, 1.1}));  // runs 1, 3, 4
  EXPECT_EQ(rows[0].run, 4);
  EXPECT_DOUBLE_EQ(rows[0].cmp.step_s.measured, 1.1);
  EXPECT_EQ(rows[0].rank_ratio_runs, (std::vector<double>{1.0, 1.5, 1.1, 1.2}));
  EXPECT_EQ(rows[0].disturbed_runs, 1);
  EXPECT_EQ(rows[0].dropped_runs, 1);
  EXPECT_FALSE(rows[0].all_runs_disturbed);
  std::ifstream kept(out / "a" / "measured.json");
  std::string text;
  std::getline(kept, text);
  EXPECT_EQ(text, "run 4");  // the kept median run's files, an extra run's, copied up
  // b: all 5 disturbed, none dropped, judged on none: the median of all five (2.4, run 2)
  EXPECT_EQ(rows[1].disturbed_runs, 5);
  EXPECT_EQ(rows[1].dropped_runs, 0);
  EXPECT_TRUE(rows[1].all_runs_disturbed);
  EXPECT_TRUE(host_disturbed(rows[1]));
  EXPECT_EQ(rows[1].run, 2);
  EXPECT_EQ(rows[2].disturbed_runs, 0);
  EXPECT_FALSE(host_disturbed(rows[2]));
  fs::remove_all(out);
}

TEST(SuiteRun, KeepDisturbedRerunsNothingAndJudgesOnEveryRun) {
  const fs::path out = fresh_dir("keep");
  std::vector<std::string> order;
  const auto rows = run_rated_suite(out, DisturbedRuns{.keep = true}, order);
  EXPECT_EQ(order.size(), 9u);  // 3 rounds of 3 cases, no extra run
  // a: steps 1.0 3.0 1.2 -> median 1.2 (run 3); run 2 counted as disturbed, not dropped
  EXPECT_EQ(rows[0].measured_runs, (std::vector<double>{1.0, 3.0, 1.2}));
  EXPECT_EQ(rows[0].run, 3);
  EXPECT_EQ(rows[0].disturbed_runs, 1);
  EXPECT_EQ(rows[0].dropped_runs, 0);
  EXPECT_EQ(rows[1].disturbed_runs, 3);
  EXPECT_FALSE(rows[1].all_runs_disturbed);  // kept: judged like any case
  fs::remove_all(out);
}

TEST(SuiteRun, TheExtraRunsAreBounded) {
  const fs::path out = fresh_dir("bound");
  std::vector<std::string> order;
  run_rated_suite(out, DisturbedRuns{.max_extra_runs = 1}, order);
  EXPECT_EQ(order.size(), 11u);  // 9, then a4 and b4; b's second extra is not run
  fs::remove_all(out);
}

}  // namespace
}  // namespace twinsim::compare
