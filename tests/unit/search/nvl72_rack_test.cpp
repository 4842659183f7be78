// A GB200 NVL72 rack as one NVLink domain: TP and EP groups of 16-64 placed within it are
// priced on NVLink (the rack's measured collectives), groups that straddle two racks are not,
// and the plan search offers such plans.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "scenario/load.hpp"
#include "sim/cost/collective_cost.hpp"
#include "sim/search/plan_search.hpp"
#include "sim/training/rank_layout.hpp"
#include "sim/training/training_report.hpp"

namespace twinsim {
namespace {

// Megatron-GPT 310.1B (Narayanan et al. 2021 Table 1): 128 heads and an FFN of 65,536 split
// over TP 64 (2 heads a rank).
Scenario gpt310b_tp64(const std::string& cluster, int dp) {
  return load_scenario_text("model: megatron-gpt-310.1b\ncluster: " + cluster +
                            "\ntraining: {seq_len: 2048, global_batch: " + std::to_string(8 * dp) +
                            ", micro_batch: 1, precision: bf16}\n"
                            "plan: {tp: 64, pp: 1, dp: " + std::to_string(dp) +
                            ", sequence_parallel: true, zero: 1, recompute: full}\n");
}

// nccl-tests on the full rack (coreweave/nccl-tests PR #43): 1 GiB all-reduce over 72 ranks in
// 3,108.8 us out-of-place. The catalog keeps its busbw; the time column checks it.
TEST(Nvl72Rack, SeventyTwoRankAllReduceIsTheRacksMeasuredTime) {
  const ClusterSpec rack = catalog_node("gb200-nvl72");
  EXPECT_EQ(rack.gpus_per_node, 72);
  const CollectiveCost c = collective_cost(rack, CollectiveOp::all_reduce, {72, 72}, 1073741824.0);
  EXPECT_TRUE(c.measured);
  EXPECT_NEAR(c.time_s(), 3108.8e-6, 0.01 * 3108.8e-6);
}

// TP 64 on a rack run as 64 GPUs: each TP group is the whole NVLink domain.
TEST(Nvl72Rack, Tp64WithinTheRackIsPricedOnNvlink) {
  const Scenario s = gpt310b_tp64("gb200-nvl72-64", 2);
  const GroupLayout tp = group_layout(s.cluster, s.plan, ParallelGroup::tp);
  EXPECT_EQ(tp.ranks, 64);
  EXPECT_EQ(tp.nodes(), 1);
  // a TP all-reduce of one layer's activations (2048 tokens x 25,600 x 2 bytes): NVLink's
  // measured curve, interpolated between the 8- and 72-GPU measurements
  const CollectiveCost c = collective_cost(s.cluster, CollectiveOp::all_reduce, tp, 2048.0 * 25600 * 2);
  EXPECT_TRUE(c.measured);
  const TrainingPrediction p = predict_training(s);
  EXPECT_GT(p.step_s, 0);
}

// On the full 72-GPU rack the second TP group of 64 holds ranks 64-127: 8 on the first rack,
// 56 on the second. Its ring runs at the pace of the 8 ranks' NICs, so the step is slower than
// the same plan on two racks of 64.
TEST(Nvl72Rack, Tp64StraddlingTwoRacksCrossesTheNics) {
  const Scenario straddled = gpt310b_tp64("gb200-nvl72", 2);
  const GroupLayout tp = group_layout(straddled.cluster, straddled.plan, ParallelGroup::tp);
  EXPECT_EQ(tp.ranks_per_node, 8);
  EXPECT_GT(tp.nodes(), 1);
  EXPECT_FALSE(collective_cost(straddled.cluster, CollectiveOp::all_reduce, tp, 1e8).measured);
  const double within = predict_training(gpt310b_tp64("gb200-nvl72-64", 2)).step_s;
  EXPECT_GT(predict_training(straddled).step_s, 1.2 * within);
  // a group of 72 ranks stride 1, and 9 ranks 8 apart, tile the 72-GPU rack
  Plan p = straddled.plan;
  p.tp = 8, p.dp = 9;
  EXPECT_EQ(group_layout(straddled.cluster, p, ParallelGroup::dp).ranks_per_node, 9);
}

// EP 64 of DeepSeek-MoE-16B's 64 experts on one rack run as 64 GPUs: the token dispatch's
// all-to-all stays on NVLink.
TEST(Nvl72Rack, Ep64WithinTheRackSimulates) {
  const Scenario s = load_scenario_text(R"(
model: deepseek-moe-16b
cluster: gb200-nvl72-64
training: {seq_len: 4096, global_batch: 128, micro_batch: 1, precision: bf16}
plan: {tp: 1, pp: 1, dp: 64, ep: 64, zero: 1}
)");
  const GroupLayout ep = group_layout(s.cluster, s.plan, ParallelGroup::ep);
  EXPECT_EQ(ep.ranks, 64);
  EXPECT_EQ(ep.nodes(), 1);
  EXPECT_GT(predict_training(s).step_s, 0);
}

// The search's space on the rack reaches TP 64 (the NVLink domain bounds TP, as 8 does on a
// DGX). One sequence a step leaves no data parallelism, so the 310B model's 64 GPUs split the
// model by TP and PP; within the rack's NVLink the search ranks TP 16-64 plans first.
TEST(Nvl72Rack, SearchFindsTp16To64PlansWithinTheRack) {
  Scenario base = gpt310b_tp64("gb200-nvl72-64", 1);
  base.training->global_batch = 1;
  SearchOptions o;
  o.space.min_gpus = 64, o.space.max_gpus = 64, o.space.max_cp = 1, o.space.max_micro_batch = 1;
  o.top = 5, o.simulate = false;
  const SearchResult r = search_plans(base, o);
  ASSERT_FALSE(r.top.empty());
  EXPECT_GE(r.top.front().plan.tp, 16) << describe(r.top.front().plan);
  const bool tp64 = std::any_of(r.top.begin(), r.top.end(), [](const SearchEntry& e) { return e.plan.tp == 64; });
  EXPECT_TRUE(tp64);
}

}  // namespace
}  // namespace twinsim
