// Which layers each pipeline stage and virtual stage holds (sim/memory/stage_layers), the
// one assignment the memory model and the step graph share. Expected layers by hand.
#include <gtest/gtest.h>

#include <set>

#include "scenario/load.hpp"
#include "sim/memory/stage_layers.hpp"
#include "sim/training/training_report.hpp"

namespace twinsim {
namespace {

// Llama 3 405B's split (Dubey et al. 2024 §3.3.2): 126 layers on 16 stages, one fewer on
// the first and the last, here with 4 virtual stages each.
Plan llama3_405b_plan() {
  Plan p;
  p.pp = 16;
  p.schedule = Schedule::interleaved;
  p.virtual_stages = 4;
  p.stage_layers = {7, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 7};
  return p;
}

TEST(StageLayers, UnevenStagesSplitIntoChunksAsEvenlyAsTheyGo) {
  ModelSpec m;
  m.layers = 126;
  const Plan p = llama3_405b_plan();
  // 7 layers in 4 chunks: 2, 2, 2, 1; 8 layers: 2 each
  EXPECT_EQ(chunk_layer_count(m, p, 0, 0), 2);
  EXPECT_EQ(chunk_layer_count(m, p, 0, 3), 1);
  EXPECT_EQ(chunk_layer_count(m, p, 1, 3), 2);
  // Megatron's order c * pp + i: round 0 holds 16 chunks of 2 layers, so stage 0's second
  // chunk starts at layer 32 and stage 15's last chunk holds the model's last layer
  EXPECT_EQ(chunk_first_layer(m, p, 0, 0), 0);
  EXPECT_EQ(chunk_first_layer(m, p, 1, 0), 2);
  EXPECT_EQ(chunk_first_layer(m, p, 0, 1), 32);
  EXPECT_EQ(chunk_first_layer(m, p, 0, 3), 96);  // 3 rounds of 32
  EXPECT_EQ(chunk_first_layer(m, p, 15, 3) + chunk_layer_count(m, p, 15, 3), 126);
  EXPECT_EQ(stage_layers(m, p, 0).total(), 7);
  EXPECT_EQ(stage_layers(m, p, 7).total(), 8);
  // every layer exactly once
  std::multiset<std::int64_t> seen;
  for (int i = 0; i < p.pp; ++i)
    for (int c = 0; c < p.virtual_stages; ++c)
      for (std::int64_t k = 0; k < chunk_layer_count(m, p, i, c); ++k) seen.insert(chunk_first_layer(m, p, i, c) + k);
  ASSERT_EQ(seen.size(), 126u);
  for (std::int64_t l = 0; l < 126; ++l) EXPECT_EQ(seen.count(l), 1u) << l;
}

TEST(StageLayers, EvenStagesKeepMegatronsChunks) {
  ModelSpec m;
  m.layers = 32;
  Plan p;
  p.pp = 4;
  p.schedule = Schedule::interleaved;
  p.virtual_stages = 2;
  // 8 layers a stage, 4 a chunk: stage 1 holds layers 4-7 and 20-23
  EXPECT_EQ(chunk_first_layer(m, p, 1, 0), 4);
  EXPECT_EQ(chunk_first_layer(m, p, 1, 1), 20);
  EXPECT_EQ(chunk_layer_count(m, p, 1, 1), 4);
}

TEST(StageLayers, AnUnevenInterleavedPlanSimulates) {
  const Scenario s = load_scenario_text(R"(
model: {layers: 6, hidden: 512, heads: 8, vocab: 32000, max_seq_len: 512}
cluster: dgx-h100
training: {seq_len: 512, global_batch: 4, micro_batch: 1}
plan: {tp: 1, pp: 2, dp: 1, schedule: interleaved, virtual_stages: 2, stage_layers: [3, 3]}
)");
  const TrainingPrediction p = predict_training(s);
  EXPECT_GT(p.step_s, 0);
  // the reported stage holds 3 layers (chunks of 2 and 1), each run by the 4 micro-batches
  int forwards = 0;
  for (const OpPrediction& op : p.ops)
    if (op.name == "attn.qkv.fwd") forwards = op.count;
  EXPECT_EQ(forwards, 3 * 4);
}

}  // namespace
}  // namespace twinsim
