// The stack each searched plan is priced on: a scenario that names none gets, for each
// candidate, the default that candidate's own plan implies (scenario/default_stack.hpp), in the
// closed form and in the event engine's re-check alike; a named stack stays for every candidate.
#include <gtest/gtest.h>

#include <optional>
#include <set>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "scenario/default_stack.hpp"
#include "scenario/load.hpp"
#include "sim/search/analytic.hpp"
#include "sim/search/plan_search.hpp"
#include "sim/search/search_json.hpp"
#include "sim/search/search_text.hpp"
#include "sim/training/training_report.hpp"

namespace twinsim {
namespace {

// 8 layers on one DGX H100 node, ZeRO-3 over 8 GPUs: with no `stack:` the loader gives it
// deepspeed (plain ZeRO-3, data parallelism alone).
const char* kScenario = R"(
model: {layers: 8, hidden: 1024, heads: 16, kv_heads: 8, ffn_hidden: 3584, vocab: 32000,
        activation: swiglu, norm: rmsnorm, position: rope, bias: false, tied_embeddings: false}
cluster: dgx-h100
training: {seq_len: 1024, global_batch: 32, micro_batch: 1, precision: bf16}
plan: {tp: 1, pp: 1, dp: 8, zero: 3}
)";

Scenario scenario(const std::string& stack = "") {
  return load_scenario_text(kScenario,
                            stack.empty() ? std::vector<std::string>{} : std::vector<std::string>{"stack=" + stack});
}

SearchSpace space_of(const Scenario& base) {
  SearchSpaceOptions o;
  o.min_gpus = o.max_gpus = 8, o.max_micro_batch = 1, o.max_cp = 1;
  return make_search_space(base, o);
}

// The first candidate of the space with this ZeRO stage and pipeline depth (tp 1).
Candidate first_with(const Scenario& base, int zero, int pp) {
  std::optional<Candidate> found;
  for_each_candidate(space_of(base), [&](const Candidate& c) {
    if (!found && c.zero == zero && c.pp == pp && c.tp == 1 && !c.tp_comm_overlap) found = c;
  });
  if (!found) throw std::runtime_error("no candidate with zero " + std::to_string(zero) + " pp " + std::to_string(pp));
  return *found;
}

AnalyticEstimate estimate_on(const Scenario& base, const Candidate& c) {
  AnalyticModel model(base, space_of(base));
  return model.estimate(c);
}

TEST(DefaultStackSearch, ScenarioWithoutStackDefaultsToDeepspeed) {
  const Scenario base = scenario();
  EXPECT_TRUE(base.stack_is_default);
  EXPECT_EQ(base.stack.name, "deepspeed");
  EXPECT_TRUE(default_stack_follows_plan(base));
  EXPECT_FALSE(default_stack_follows_plan(scenario("deepspeed")));
}

// A ZeRO-3 plan over two pipeline stages is torchtitan's (DeepSpeed's PipelineEngine refuses
// ZeRO-2/3): searched from the defaulted scenario it is priced exactly as from one naming
// torchtitan-compile, and not as on the scenario's own deepspeed (the search did that before).
TEST(DefaultStackSearch, ZeroThreeWithPipelineIsPricedOnTorchtitanCompile) {
  const Scenario base = scenario();
  const Candidate c = first_with(base, 3, 2);
  EXPECT_EQ(default_training_stack_name(c), "torchtitan-compile");
  const AnalyticEstimate got = estimate_on(base, c);
  const AnalyticEstimate titan = estimate_on(scenario("torchtitan-compile"), c);
  EXPECT_DOUBLE_EQ(got.step_s, titan.step_s) << describe(c);
  EXPECT_EQ(got.peak_bytes, titan.peak_bytes) << describe(c);
  EXPECT_NE(got.step_s, estimate_on(scenario("deepspeed"), c).step_s) << describe(c);
  // the event engine's re-check runs on the same stack
  const Scenario checked = candidate_scenario(base, c);
  EXPECT_EQ(checked.stack.name, "torchtitan-compile");
  EXPECT_TRUE(checked.stack_is_default);
  EXPECT_DOUBLE_EQ(predict_training(checked).step_s,
                   predict_training(candidate_scenario(scenario("torchtitan-compile"), c)).step_s);
}

// A ZeRO-1 plan of the same (ZeRO-3, deepspeed) scenario is Megatron-Core's.
TEST(DefaultStackSearch, ZeroOneCandidateOfAZeroThreeScenarioIsPricedOnMegatronCore) {
  const Scenario base = scenario();
  const Candidate c = first_with(base, 1, 1);
  const AnalyticEstimate got = estimate_on(base, c);
  EXPECT_DOUBLE_EQ(got.step_s, estimate_on(scenario("megatron-core"), c).step_s) << describe(c);
  EXPECT_NE(got.step_s, estimate_on(scenario("deepspeed"), c).step_s) << describe(c);
  EXPECT_EQ(candidate_scenario(base, c).stack.name, "megatron-core");
}

// A named stack prices every candidate, whatever its plan's default would be.
TEST(DefaultStackSearch, NamedStackStaysForEveryCandidate) {
  const Scenario named = scenario("megatron-core");
  const Candidate c = first_with(named, 3, 1);  // its own default: deepspeed
  EXPECT_EQ(default_training_stack_name(c), "deepspeed");
  EXPECT_EQ(candidate_scenario(named, c).stack.name, "megatron-core");
  EXPECT_FALSE(candidate_scenario(named, c).stack_is_default);
  // the estimate a model built on megatron-core gives, not the deepspeed one
  EXPECT_NE(estimate_on(named, c).step_s, estimate_on(scenario("deepspeed"), c).step_s) << describe(c);
}

// The analytic search lists each plan with the stack it was priced on: from the defaulted
// scenario, each plan's own default (several of them over this space); from a named stack,
// that name. JSON: `stack` beside each plan, and the overrides name it only when defaulted.
TEST(DefaultStackSearch, ResultSaysWhichStackEachPlanWasPricedOn) {
  SearchOptions o;
  o.space.min_gpus = o.space.max_gpus = 8, o.space.max_micro_batch = 1, o.space.max_cp = 1;
  o.simulate = false;
  const SearchResult defaulted = search_plans(scenario(), o);
  std::set<std::string> stacks;
  const nlohmann::json j = to_json(defaulted, o.objective);
  ASSERT_EQ(j["pareto"].size(), defaulted.pareto.size());
  for (std::size_t i = 0; i < defaulted.pareto.size(); ++i) {
    const Candidate& c = defaulted.pareto[i].plan;
    const std::string stack(default_training_stack_name(c));
    EXPECT_EQ(defaulted.stack_of(c), stack) << describe(c);
    EXPECT_EQ(j["pareto"][i]["plan"]["stack"], stack);
    const std::string overrides = j["pareto"][i]["plan"]["overrides"];
    EXPECT_EQ(overrides.substr(overrides.rfind(' ') + 1), "stack=" + stack);
    stacks.insert(stack);
  }
  EXPECT_GE(stacks.size(), 2u);
  const SearchResult named = search_plans(scenario("deepspeed"), o);
  const nlohmann::json n = to_json(named, o.objective);
  for (std::size_t i = 0; i < named.top.size(); ++i) {
    EXPECT_EQ(named.stack_of(named.top[i].plan), "deepspeed");
    EXPECT_EQ(n["top"][i]["plan"]["stack"], "deepspeed");
    EXPECT_EQ(std::string(n["top"][i]["plan"]["overrides"]).find("stack="), std::string::npos);
  }
  std::ostringstream text;
  print_result(text, defaulted);
  EXPECT_NE(text.str().find("stack "), std::string::npos);
}

}  // namespace
}  // namespace twinsim
