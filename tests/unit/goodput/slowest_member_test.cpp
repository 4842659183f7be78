// Stragglers from a spread of GPU speeds (hardware/clock_spread.hpp): the expected slowest of
// n GPUs against tabulated order statistics, and the step it slows.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "hardware/clock_spread.hpp"
#include "scenario/load.hpp"
#include "sim/training/training_report.hpp"
#include "tests/unit/goodput/llama8b_scenario.hpp"

namespace twinsim {
namespace {

TEST(SlowestMember, ExpectedMaximumOfNormalsMatchesTheTables) {
  // E[max of n N(0,1)]: n = 2 is 1/sqrt(pi), n = 3 is 3/(2 sqrt(pi)) exactly; the others as
  // tabulated (Harter 1961, "Expected values of normal order statistics", Biometrika 48)
  EXPECT_DOUBLE_EQ(expected_max_standard_normal(1), 0);
  EXPECT_NEAR(expected_max_standard_normal(2), 1 / std::sqrt(M_PI), 1e-6);
  EXPECT_NEAR(expected_max_standard_normal(3), 1.5 / std::sqrt(M_PI), 1e-6);
  EXPECT_NEAR(expected_max_standard_normal(5), 1.16296, 1e-4);
  EXPECT_NEAR(expected_max_standard_normal(10), 1.53875, 1e-4);
  EXPECT_NEAR(expected_max_standard_normal(100), 2.50759, 1e-4);
  EXPECT_NEAR(expected_max_standard_normal(1000), 3.24144, 1e-4);
  // and it keeps growing, about as sqrt(2 ln n), to a 100,352-GPU job
  EXPECT_GT(expected_max_standard_normal(100352), 4.0);
  EXPECT_LT(expected_max_standard_normal(100352), std::sqrt(2 * std::log(100352.0)));
}

TEST(SlowestMember, LagIsTheSlowestGpusExtraTimePerUnitOfWork) {
  // speeds spread 1%: the slowest of 1000 at 1 - 0.0324144, so 1/0.9675856 - 1 = 3.350% behind
  EXPECT_NEAR(slowest_member_lag(0.01, 1000), 1 / (1 - 0.0324144) - 1, 1e-6);
  EXPECT_DOUBLE_EQ(slowest_member_lag(0.01, 1), 0);
}

using test::kLlama8b;

TEST(SlowestMember, ClockSpreadSetsTheStragglerOfTheWholeJob) {
  const Scenario spread = load_scenario_text(kLlama8b, {"cluster.clock_spread=0.01"});
  const double lag = slowest_member_lag(0.01, 64);  // a training step waits for all 64 GPUs
  EXPECT_DOUBLE_EQ(spread.cluster.straggler, lag);
  // the same step as a scenario giving that lag directly: one mechanism, cluster.straggler's
  char exact[64];
  std::snprintf(exact, sizeof exact, "cluster.straggler=%.17g", lag);
  const Scenario direct = load_scenario_text(kLlama8b, {exact});
  const double base = predict_training(load_scenario_text(kLlama8b)).step_s;
  const double slow = predict_training(spread).step_s;
  EXPECT_GT(slow, base);
  EXPECT_NEAR(slow, predict_training(direct).step_s, 1e-6 * slow);
  // twice the GPUs, a slower slowest one
  const Scenario wider = load_scenario_text(kLlama8b, {"cluster.clock_spread=0.01", "plan.dp=16",
                                                       "training.global_batch=128"});
  EXPECT_DOUBLE_EQ(wider.cluster.straggler, slowest_member_lag(0.01, 128));
  EXPECT_GT(wider.cluster.straggler, lag);
  try {
    load_scenario_text(kLlama8b, {"cluster.clock_spread=0.01", "cluster.straggler=0.02"});
    ADD_FAILURE() << "clock_spread and straggler both accepted";
  } catch (const ScenarioError& e) {
    EXPECT_EQ(e.key, "cluster.clock_spread");
  }
}

}  // namespace
}  // namespace twinsim
