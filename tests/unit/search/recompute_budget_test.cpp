// Per-layer recompute mix: uniform policies agree with the memory model; with an ample
// budget nothing is recomputed; with a tight one the mix fits and is no slower than
// the uniform policies that fit.
#include <gtest/gtest.h>

#include "scenario/load.hpp"
#include "sim/memory/memory_report.hpp"
#include "sim/search/recompute_budget.hpp"

namespace twinsim {
namespace {

Scenario gpt3(const std::string& recompute) {
  return load_scenario_text(default_scenario_text(), {"plan.recompute=" + recompute});
}

TEST(RecomputeBudget, UniformPoliciesMatchTheMemoryModel) {
  const RecomputeMix r = plan_recompute(gpt3("none"));
  EXPECT_EQ(r.all_none.peak_bytes, training_stage_memory(gpt3("none"), 0).peak_bytes);
  EXPECT_EQ(r.all_selective.peak_bytes, training_stage_memory(gpt3("selective"), 0).peak_bytes);
  EXPECT_EQ(r.all_full.peak_bytes, training_stage_memory(gpt3("full"), 0).peak_bytes);
  // Korthikanti et al. 2022 Table 2: full keeps only each layer's input, the least
  EXPECT_LT(r.kept_full, r.kept_selective);
  EXPECT_LT(r.kept_selective, r.kept_none);
}

TEST(RecomputeBudget, AmpleBudgetRecomputesNothing) {
  const RecomputeMix r = plan_recompute(gpt3("none"), std::int64_t{1} << 50);
  EXPECT_TRUE(r.feasible);
  EXPECT_EQ(r.none, r.layers);
  EXPECT_EQ(r.mix.recompute_s, 0.0);
}

TEST(RecomputeBudget, TightBudgetMixesAndBeatsUniformPolicies) {
  const RecomputeMix probe = plan_recompute(gpt3("none"), std::int64_t{1} << 50);
  // halfway between keeping everything and recomputing every layer fully
  const std::int64_t budget = (probe.all_none.peak_bytes + probe.all_full.peak_bytes) / 2;
  const RecomputeMix r = plan_recompute(gpt3("none"), budget);
  ASSERT_TRUE(r.feasible);
  EXPECT_LE(r.mix.peak_bytes, budget);
  EXPECT_LT(r.none, r.layers);  // something had to be recomputed
  EXPECT_GT(r.none, 0);         // but not everything
  EXPECT_LE(r.mix.recompute_s, r.all_full.recompute_s);
  if (r.all_selective.fits) {
    EXPECT_LE(r.mix.recompute_s, r.all_selective.recompute_s);
  }
}

}  // namespace
}  // namespace twinsim
