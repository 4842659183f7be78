// Every held-out published judge (scenarios/validation/cases.csv, vTrain's rows aside: they are
// built in code on megatron-eager, the default's own host figures) predicted twice: with the stack
// its scenario names, and with that stack replaced by the one a scenario that names none gets
// (scenario/default_stack.hpp): the scenario's text loaded with its `stack:` entry and its stack
// overrides left out, so the loader marks the stack as its default (Scenario::stack_is_default). The guide: "Published
// runs judge the catalog as a user would run it, with and without a named stack. A scenario that names no stack must
// still get a realistic answer."
//
// Printed: each judge's error both ways and, per family (the case name's first word and the stack
// it names), the median and max |predicted / published - 1| and how many are within 15% and 20%.
// Asserted: every judge loads without its stack (no default the scenario's own checks refuse), and
// the medians without stay within a margin of those with (kFamilyMargin, kOverallMargin below).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "scenario/load.hpp"
#include "trust/validation_cases.hpp"

namespace twinsim {
namespace {

struct JudgedTwice {
  std::string name, family, named_stack, default_stack;
  double with_stack = 0, without_stack = 0;  // predicted / published - 1
};

// A family's errors: median, max, count within 15% and 20%.
struct FamilyErrors {
  std::string named_stack;
  std::vector<double> with_stack, without_stack;
  std::map<std::string, int> defaults;  // the default stacks its judges got
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double largest(const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); }

int within(const std::vector<double>& v, double bound) {
  return static_cast<int>(std::count_if(v.begin(), v.end(), [&](double e) { return e <= bound; }));
}

double signed_error(const trust::CaseError& e) { return e.predicted / e.measured - 1; }

// The case name's first word (trtllm1, megatron, torchtitan, narayanan2021, ...) and the stack.
std::string family_of(const std::string& case_name, const std::string& stack) {
  return case_name.substr(0, case_name.find('-')) + " [" + stack + "]";
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The scenario text less its top-level `stack:` entry (its line and the indented lines after it:
// a block or a flow mapping across lines). The judges' scenarios name no file by a relative path,
// so the text loads as the file does.
std::string without_stack(const std::string& text) {
  std::istringstream in(text);
  std::string out, line;
  bool in_stack = false;
  while (std::getline(in, line)) {
    if (line.starts_with("stack:")) in_stack = true;
    else if (!line.empty() && line[0] != ' ') in_stack = false;
    if (!in_stack) out += line + "\n";
  }
  return out;
}

// The overrides less those that name or edit the stack.
std::vector<std::string> without_stack(const std::vector<std::string>& overrides) {
  std::vector<std::string> out;
  for (const std::string& o : overrides)
    if (!o.starts_with("stack=") && !o.starts_with("stack.")) out.push_back(o);
  return out;
}

std::vector<JudgedTwice> judge_every_case_twice() {
  const std::string root = TWINSIM_SOURCE_DIR;
  std::vector<JudgedTwice> out;
  for (const trust::ValidationCase& c : trust::read_validation_cases(root + "/scenarios/validation/cases.csv")) {
    if (!c.held_out || c.scenario.ends_with(".csv")) continue;
    const Scenario named = load_scenario_file(root + "/scenarios/" + c.scenario, c.overrides);
    // throws where the scenario's own checks refuse the default stack
    const Scenario unnamed = load_scenario_text(without_stack(read_text(root + "/scenarios/" + c.scenario)),
                                                without_stack(c.overrides), c.name);
    EXPECT_TRUE(unnamed.stack_is_default) << c.name;
    JudgedTwice j{c.name, family_of(c.name, named.stack.name), named.stack.name, unnamed.stack.name};
    j.with_stack = signed_error(trust::case_error(c, named, c.name));
    j.without_stack = signed_error(trust::case_error(c, unnamed, c.name));
    std::printf("%-58s %-20s %+7.1f%%   %-18s %+7.1f%%\n", c.name.c_str(), j.named_stack.c_str(), 100 * j.with_stack,
                j.default_stack.c_str(), 100 * j.without_stack);
    out.push_back(j);
  }
  return out;
}

std::map<std::string, FamilyErrors> by_family(const std::vector<JudgedTwice>& judged) {
  std::map<std::string, FamilyErrors> families;
  for (const JudgedTwice& j : judged) {
    FamilyErrors& f = families[j.family];
    f.named_stack = j.named_stack;
    f.with_stack.push_back(std::abs(j.with_stack));
    f.without_stack.push_back(std::abs(j.without_stack));
    ++f.defaults[j.default_stack];
  }
  return families;
}

void print_family(const std::string& name, const FamilyErrors& f) {
  const auto n = f.with_stack.size();
  std::string defaults;
  for (const auto& [stack, count] : f.defaults) defaults += " " + stack + " x" + std::to_string(count);
  std::printf(
      "%-34s n %3zu  with: median %5.1f%% max %6.1f%% <=15%% %3d <=20%% %3d | without: median %5.1f%% max %6.1f%% "
      "<=15%% %3d <=20%% %3d |%s\n",
      name.c_str(), n, 100 * median(f.with_stack), 100 * largest(f.with_stack), within(f.with_stack, 0.15),
      within(f.with_stack, 0.20), 100 * median(f.without_stack), 100 * largest(f.without_stack),
      within(f.without_stack, 0.15), within(f.without_stack, 0.20), defaults.c_str());
}

// Each family's median |error| without its stack at most kFamilyMargin above its median with it
// (a default that regresses a family badly: the device alone, or vLLM V0's engine for serving,
// fails it), except the families whose named stack nothing in their scenario can tell
// (kUntellable). Over every judge, the median without at most kOverallMargin above the median
// with. Figures of 2026-12-07 (with -> without, median |error|): every judge 7.9% -> 16.6%
// (18.8% under the rules before the torchtitan and NVFP4 ones, which fails kOverallMargin);
// the largest family gap kept, torchtitan [torchtitan] 10.3% -> 32.1%. After the session's
// merges and the ZeRO-3-with-TP rule: 7.2% -> 14.6% (14.7% without that rule), 186 of 360
// within 15% without a stack (281 with).
constexpr double kFamilyMargin = 0.25;
constexpr double kOverallMargin = 0.10;

// Named stacks whose choice no plan or workload key implies, so a default cannot find them:
// a 2021 release (DeepSpeed v0.3's blocking ZeRO-3 gathers: today's deepspeed is 2-3x faster
// on Narayanan et al.'s ZeRO-3 rows), Hugging Face's modeling code (hf-eager's unfused autocast
// kernels, measured-*; Liger-Kernel's fused kernels and FlashAttention-3, hf-deepspeed-liger).
bool untellable(const std::string& named_stack) {
  return named_stack == "deepspeed-2021" || named_stack == "hf-eager" || named_stack == "hf-deepspeed-liger";
}

TEST(NoStackJudges, EveryJudgeWithoutItsStackStaysRealistic) {
  const std::vector<JudgedTwice> judged = judge_every_case_twice();
  ASSERT_GE(judged.size(), 300u);  // cases.csv's held-out judges, vTrain's rows aside
  FamilyErrors all;
  for (const auto& [name, f] : by_family(judged)) {
    print_family(name, f);
    all.with_stack.insert(all.with_stack.end(), f.with_stack.begin(), f.with_stack.end());
    all.without_stack.insert(all.without_stack.end(), f.without_stack.begin(), f.without_stack.end());
    if (!untellable(f.named_stack)) {
      EXPECT_LE(median(f.without_stack), median(f.with_stack) + kFamilyMargin) << name;
    }
  }
  print_family("every judge", all);
  EXPECT_LE(median(all.without_stack), median(all.with_stack) + kOverallMargin);
}

}  // namespace
}  // namespace twinsim
