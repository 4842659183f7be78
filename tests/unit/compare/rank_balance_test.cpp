// Which measured runs the host disturbed (compare/rank_balance): each rank's compute from a
// hand-made trace, the slowest over the fastest, and which plans' ranks do the same work.
#include "compare/rank_balance.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace twinsim::compare {
namespace {

using nlohmann::json;

// One complete event of rank `tid`.
json trace_event(int tid, const std::string& name, double ts, double dur) {
  return {{"ph", "X"}, {"pid", 0}, {"tid", tid}, {"name", name}, {"ts", ts}, {"dur", dur}};
}

// Two ranks of a TP-2 decode, 4 calls of each op, the first the prompt's (prefill) pass:
//   rank 0: qkv 900, 10, 12, 10 -> median of the last 3 = 10; norm 90, 3, 3, 4 -> 3
//   rank 1: qkv 900, 14, 14, 13 -> 14;                       norm 90, 5, 5, 5 -> 5
// both wait at tp_exit (rank 0 the longer: it arrives first) and head.sample (TP all-reduces):
// neither counts. Compute 10 + 3 = 13 and 14 + 5 = 19, ratio 19/13 = 1.4615.
json two_rank_trace(double rank1_qkv) {
  json events = json::array();
  events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", 0}, {"tid", 0}, {"args", {{"name", "rank 0"}}}});
  const double qkv[2][4] = {{900, 10, 12, 10}, {900, rank1_qkv, rank1_qkv, rank1_qkv - 1}};
  const double norm[2][4] = {{90, 3, 3, 4}, {90, 5, 5, 5}};
  for (int tid = 0; tid < 2; ++tid)
    for (int pass = 0; pass < 4; ++pass) {
      const double t = 1000.0 * pass;
      events.push_back(trace_event(tid, "layer0.attn.norm.fwd", t, norm[tid][pass]));
      events.push_back(trace_event(tid, "layer0.attn.qkv.fwd", t + 100, qkv[tid][pass]));
      events.push_back(trace_event(tid, "layer0.attn.tp_exit.fwd", t + 200, tid == 0 ? 40 : 4));
      events.push_back(trace_event(tid, "head.sample.fwd", t + 300, tid == 0 ? 30 : 2));
    }
  return {{"traceEvents", events}};
}

TEST(RankBalance, EachRanksComputeIsItsMedianCallsAfterTheFirstSummedWithoutTheWaits) {
  const auto compute = rank_compute(two_rank_trace(14), "hand.json");
  ASSERT_EQ(compute.size(), 2u);
  EXPECT_DOUBLE_EQ(compute.at(0), 13.0);  // qkv 10 + norm 3
  EXPECT_DOUBLE_EQ(compute.at(1), 19.0);  // qkv 14 + norm 5
  EXPECT_NEAR(rank_compute_ratio(compute), 19.0 / 13.0, 1e-12);
  EXPECT_TRUE(is_disturbed(rank_compute_ratio(compute)));
}

TEST(RankBalance, TheCutIsInclusiveAndBelowItARunIsKept) {
  // rank 1's qkv 10.6, 10.6, 9.6 -> median 10.6; its compute 15.6 = 1.2 x 13: not disturbed
  EXPECT_NEAR(rank_compute_ratio(rank_compute(two_rank_trace(10.6), "hand.json")), 1.2, 1e-12);
  EXPECT_FALSE(is_disturbed(1.2));
  EXPECT_TRUE(is_disturbed(kSlowRankRatio));  // at the cut: disturbed
  EXPECT_FALSE(is_disturbed(0));              // not measured
}

TEST(RankBalance, OneRankOrNoComputeGivesNoRatioAndABadTraceIsRefused) {
  const json one = {{"traceEvents", {trace_event(0, "mlp.fc1.fwd", 0, 5), trace_event(0, "mlp.fc1.fwd", 10, 5)}}};
  EXPECT_EQ(rank_compute_ratio(rank_compute(one, "one.json")), 0);
  // rank 1 only waits: compute 0, no ratio rather than a division by zero
  const json waits = {{"traceEvents",
                       {trace_event(0, "mlp.fc1.fwd", 0, 5), trace_event(0, "mlp.fc1.fwd", 10, 5),
                        trace_event(1, "dp.grad_reduce", 0, 5), trace_event(1, "dp.grad_reduce", 10, 5)}}};
  EXPECT_EQ(rank_compute_ratio(rank_compute(waits, "waits.json")), 0);
  EXPECT_THROW(rank_compute(json{{"traceEvents", 3}}, "bad.json"), std::invalid_argument);
}

TEST(RankBalance, CommunicationOpsAndSamplingWaitComputeOpsDoNot) {
  for (const char* name : {"layer3.attn.tp_exit.fwd", "layer0.mlp.tp_enter.bwd_dgrad", "dp.grad_reduce",
                           "dp.param_gather", "embedding.reduce.fwd", "head.enter.bwd_dgrad", "layer1.moe.dispatch.fwd",
                           "layer1.moe.combine.bwd_dgrad", "pp.send.bwd_dgrad", "head.sample.fwd"})
    EXPECT_TRUE(waits_on_other_ranks(name)) << name;
  for (const char* name : {"layer0.attn.qkv.fwd", "layer2.mlp.act.bwd_dgrad", "optimizer.step", "head.logits.fwd",
                           "layer1.moe.experts.gate_up.fwd", "embedding.lookup.fwd"})
    EXPECT_FALSE(waits_on_other_ranks(name)) << name;
}

TEST(RankBalance, TensorDataAndExpertParallelRanksDoTheSameWorkPipelineStagesDoNot) {
  Plan p;
  EXPECT_FALSE(ranks_do_same_work(p, false));  // one rank
  p.tp = 2;
  EXPECT_TRUE(ranks_do_same_work(p, false));
  EXPECT_TRUE(ranks_do_same_work(p, true));  // a served model's TP ranks share every pass
  p.tp = 1;
  p.dp = 2;
  p.ep = 2;
  EXPECT_TRUE(ranks_do_same_work(p, false));
  EXPECT_FALSE(ranks_do_same_work(p, true));  // served replicas decode their own requests
  p.pp = 2;
  EXPECT_FALSE(ranks_do_same_work(p, false));  // stages hold different layers
}

}  // namespace
}  // namespace twinsim::compare
