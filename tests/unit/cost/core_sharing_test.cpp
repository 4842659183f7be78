// A CPU host's cores shared by its ranks (hardware/core_sharing.hpp, issue 61): the
// calibrated figures hold for a plan with a rank on every core; a plan alone on the
// machine gets the measured speedups, and its step is predicted faster.
#include <gtest/gtest.h>

#include "hardware/core_sharing.hpp"
#include "scenario/errors.hpp"
#include "scenario/load.hpp"
#include "sim/training/training_report.hpp"

namespace twinsim {
namespace {

constexpr const char* kTinyGpt = R"(
name: core-sharing
model: tiny-gpt
cluster:
  preset: host
  core_sharing: {busy_ranks: 2, alone_gemm_speedup: 2.0, alone_memory_speedup: 1.5}
training: {seq_len: 64, global_batch: 8, micro_batch: 2, precision: fp32, optimizer: adam}
plan: {tp: 1, pp: 1, dp: 1}
)";

TEST(CoreSharing, ARankAloneGetsTheMeasuredSpeedups) {
  const Scenario shared = load_scenario_text(kTinyGpt, {"plan.dp=2"});
  const Scenario alone = load_scenario_text(kTinyGpt);
  const Scenario plain = load_scenario_text(kTinyGpt, {"cluster.core_sharing.alone_gemm_speedup=1",
                                                       "cluster.core_sharing.alone_memory_speedup=1"});
  // two ranks on two busy cores: the calibrated figures, as measured
  EXPECT_DOUBLE_EQ(shared.cluster.gpu.peak(Dtype::fp32), plain.cluster.gpu.peak(Dtype::fp32));
  EXPECT_DOUBLE_EQ(shared.cluster.gpu.hbm_bandwidth_Bps, plain.cluster.gpu.hbm_bandwidth_Bps);
  // one rank: every math type's peak x2, the bandwidth x1.5
  for (const auto& [dtype, flops] : plain.cluster.gpu.peak_flops)
    EXPECT_DOUBLE_EQ(alone.cluster.gpu.peak(dtype), 2.0 * flops) << to_string(dtype);
  EXPECT_DOUBLE_EQ(alone.cluster.gpu.hbm_bandwidth_Bps, 1.5 * plain.cluster.gpu.hbm_bandwidth_Bps);
  // its step: faster than without the sharing, but not by more than the larger speedup
  const double fast = predict_training(alone).step_s, slow = predict_training(plain).step_s;
  EXPECT_LT(fast, slow / 1.4);
  EXPECT_GT(fast, slow / 2.0 * 0.999);
}

TEST(CoreSharing, TheMappingIsChecked) {
  try {
    load_scenario_text(kTinyGpt, {"cluster.core_sharing.busy_ranks=1"});
    ADD_FAILURE() << "busy_ranks 1 accepted: there is nothing shared";
  } catch (const ScenarioError& e) {
    EXPECT_EQ(e.key, "cluster.core_sharing.busy_ranks");
  }
  try {
    load_scenario_text(kTinyGpt, {"cluster.core_sharing.alone_speedup=2"});
    ADD_FAILURE() << "an unknown key accepted";
  } catch (const ScenarioError& e) {
    EXPECT_NE(e.key.find("cluster.core_sharing"), std::string::npos);
  }
}

}  // namespace
}  // namespace twinsim
