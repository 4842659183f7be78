// The search with ZeRO-Offload in its space: Llama 3 8B fully fine-tuned on one H100 fits
// only with the optimizer states in CPU memory, and the estimate agrees with the engine.
#include <gtest/gtest.h>

#include "scenario/load.hpp"
#include "sim/search/plan_search.hpp"

namespace twinsim {
namespace {

Scenario one_h100() {
  return load_scenario_text(R"(
model: llama3-8b
cluster: dgx-h100
training: {seq_len: 4096, global_batch: 16, micro_batch: 1, precision: bf16}
plan: {tp: 1, pp: 1, dp: 1}
)");
}

TEST(OffloadSearch, OnlyOffloadedPlansFitOneGpu) {
  SearchOptions o;
  o.space.min_gpus = o.space.max_gpus = 1;
  o.top = 3;
  // bf16 weights and grads (4 B/param) and Adam's 12 B/param: 120 GiB of 80
  const SearchResult without = search_plans(one_h100(), o);
  EXPECT_EQ(without.fitting, 0);
  o.space.consider_offload = true;
  const SearchResult with = search_plans(one_h100(), o);
  EXPECT_EQ(with.candidates, 2 * without.candidates);  // every plan, with and without
  EXPECT_GT(with.fitting, 0);
  ASSERT_FALSE(with.top.empty());
  for (const SearchEntry& e : with.top) {
    EXPECT_TRUE(e.plan.offload_optimizer);
    EXPECT_EQ(e.plan.schedule, Schedule::one_f_one_b);  // one stage: one micro-batch's activations
    ASSERT_TRUE(e.simulated);
    EXPECT_NEAR(e.analytic.step_s, e.simulated_step_s, 0.02 * e.simulated_step_s);  // one optimizer formula
  }
}

}  // namespace
}  // namespace twinsim
