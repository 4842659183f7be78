// Pipeline schedules: every pass once, backward after forward, and the activation
// memory each schedule implies (Narayanan et al. 2021 §2.2; Korthikanti et al. 2022 §4.2.3).
#include <gtest/gtest.h>

#include <set>
#include <tuple>

#include "sim/training/pipeline_schedule.hpp"

namespace twinsim {
namespace {

void expect_complete_and_causal(const std::vector<PipelineSlot>& order, int m, int v) {
  std::set<std::tuple<int, int, bool>> seen;
  for (const PipelineSlot& s : order) {
    EXPECT_TRUE(seen.insert({s.micro_batch, s.chunk, s.forward}).second) << "slot twice";
    if (!s.forward) { EXPECT_TRUE(seen.count({s.micro_batch, s.chunk, true})) << "backward before forward"; }
  }
  EXPECT_EQ(order.size(), static_cast<std::size_t>(2 * m * v));
}

TEST(PipelineSchedule, EverySlotOnceBackwardAfterForward) {
  for (Schedule sch : {Schedule::gpipe, Schedule::one_f_one_b})
    for (int pp : {1, 2, 4, 8})
      for (int m : {1, 3, 8, 16})
        for (int stage = 0; stage < pp; ++stage) expect_complete_and_causal(stage_schedule(sch, pp, stage, m, 1), m, 1);
  for (int pp : {2, 4})
    for (int v : {2, 3})
      for (int m : {pp, 2 * pp, 4 * pp})
        for (int stage = 0; stage < pp; ++stage)
          expect_complete_and_causal(stage_schedule(Schedule::interleaved, pp, stage, m, v), m, v);
}

TEST(PipelineSchedule, GPipeKeepsEveryMicroBatch) {
  EXPECT_EQ(peak_in_flight(stage_schedule(Schedule::gpipe, 4, 0, 16, 1)), 16);
}

TEST(PipelineSchedule, OneFOneBStageKeepsPipelineDepthMinusRank) {
  // PipeDream-Flush: stage i holds at most pp - i micro-batches (Narayanan et al. 2021 §2.2.1)
  for (int stage = 0; stage < 8; ++stage)
    EXPECT_EQ(peak_in_flight(stage_schedule(Schedule::one_f_one_b, 8, stage, 32, 1)), 8 - stage);
  // fewer micro-batches than stages: all of them
  EXPECT_EQ(peak_in_flight(stage_schedule(Schedule::one_f_one_b, 8, 0, 3, 1)), 3);
}

TEST(PipelineSchedule, InterleavedFirstStageHoldsKorthikantiFactor) {
  // Korthikanti et al. 2022 §4.2.3: the first stage of the interleaved schedule stores
  // activations of L(1 + (p-1)/(pv)) layers; in chunks of L/(pv) layers that is pv + p - 1
  for (int p : {2, 4, 8})
    for (int v : {2, 4}) {
      const int peak = peak_in_flight(stage_schedule(Schedule::interleaved, p, 0, 4 * p, v));
      EXPECT_EQ(peak, p * v + p - 1) << "p=" << p << " v=" << v;
    }
}

TEST(PipelineSchedule, InterleavedChunksFollowMegatronOrder) {
  // pp=2, v=2: stage 0 runs micro-batches 0,1 on chunk 0, then 0,1 on chunk 1
  const auto order = stage_schedule(Schedule::interleaved, 2, 0, 4, 2);
  ASSERT_GE(order.size(), 4u);
  EXPECT_EQ(order[0].chunk, 0);
  EXPECT_EQ(order[1].chunk, 0);
  EXPECT_EQ(order[1].micro_batch, 1);
  EXPECT_EQ(order[2].chunk, 1);
  EXPECT_EQ(order[2].micro_batch, 0);
}

}  // namespace
}  // namespace twinsim
