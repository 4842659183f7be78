// The reference executor's NaN/Inf check of its gradient shard before every update
// (exec/train/trainer.cpp stop_if_not_finite), priced where the device lists the scan's
// measured rate (kernel_efficiency "finite_check", written by `twinsim calibrate`).
#include <gtest/gtest.h>

#include <string>

#include "models/layer_ops.hpp"
#include "scenario/load.hpp"
#include "sim/training/step_graph.hpp"

namespace twinsim {
namespace {

// tiny-gpt on one DGX A100 node, its plan then narrowed to `dp` ranks (the scan's price reads
// the plan's groups alone)
Scenario tiny_gpt(int dp) {
  Scenario s = load_scenario_text(
      "model: tiny-gpt\n"
      "cluster: {preset: dgx-a100-80gb, nodes: 1}\n"
      "training: {seq_len: 128, global_batch: 8, micro_batch: 1, precision: fp32}\n"
      "plan: {tp: 1, pp: 1, dp: 8}\n");
  s.plan.dp = dp;
  return s;
}

// 100 GB/s, the scan at half of it, no launch time
void measured_scan(Scenario& s) {
  s.cluster.gpu.hbm_bandwidth_Bps = 100e9;
  s.cluster.gpu.kernel_launch_s = 0;
  s.cluster.gpu.kernel_efficiency[std::string(kernel_names::kFiniteCheck)].fwd = {{1.0, 0.5}};
}

TEST(FiniteCheck, AReadOfTheShardsGradientsAtTheMeasuredRate) {
  Scenario s = tiny_gpt(1);
  // a catalog GPU lists no scan: GPU stacks check the loss or the clipped norm, not every gradient
  EXPECT_EQ(finite_check_s(s.cluster, s.stack, s.plan, *s.training, 1e6), 0.0);
  measured_scan(s);
  // a million fp32 gradients: 4 MB read at 100 GB/s x 0.5 = 80 us; one rank, no all-reduce
  EXPECT_NEAR(finite_check_s(s.cluster, s.stack, s.plan, *s.training, 1e6), 80e-6, 1e-12);
  // the update's time grows by the scan (the step graph and the search call this one function)
  const double with = optimizer_shard_s(s.cluster, s.stack, s.plan, *s.training, 1e6);
  s.cluster.gpu.kernel_efficiency.erase(std::string(kernel_names::kFiniteCheck));
  const double without = optimizer_shard_s(s.cluster, s.stack, s.plan, *s.training, 1e6);
  EXPECT_NEAR(with - without, 80e-6, 1e-12);
}

TEST(FiniteCheck, ManyRanksAddTheFlagsAllReduce) {
  Scenario one = tiny_gpt(1), two = tiny_gpt(2);
  measured_scan(one);
  measured_scan(two);
  // the same shard read on each rank, then the 4-byte max over the data-parallel pair
  const double alone = finite_check_s(one.cluster, one.stack, one.plan, *one.training, 1e6);
  const double pair = finite_check_s(two.cluster, two.stack, two.plan, *two.training, 1e6);
  EXPECT_NEAR(alone, 80e-6, 1e-12);
  EXPECT_GT(pair, alone);
}

}  // namespace
}  // namespace twinsim
