// Which layers each pipeline stage and virtual stage holds (sim/memory/stage_layers), the
// one assignment the memory model and the step graph share. Expected layers by hand.
#include <gtest/gtest.h>

#include <set>

#include "scenario/load.hpp"
#include "sim/memory/memory_report.hpp"
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

// Megatron-core's split counting the embedding and the loss as a layer each
// (plan.account_for_embedding_in_pipeline_split / _loss_): Megatron-Bridge's Llama 3.1 405B
// on GB200 runs 126 layers + 2 on 16 stages x 8 virtual stages, one unit a virtual stage: the
// first virtual stage of stage 0 holds the embedding alone, the last of stage 15 the loss alone.
Plan accounted_405b_plan() {
  Plan p;
  p.pp = 16;
  p.schedule = Schedule::interleaved;
  p.virtual_stages = 8;
  p.account_for_embedding_in_pipeline_split = true;
  p.account_for_loss_in_pipeline_split = true;
  return p;
}

TEST(StageLayers, TheAccountedSplitLeavesTheEmbeddingsAndTheLossVirtualStagesWithoutLayers) {
  ModelSpec m;
  m.layers = 126;
  Plan p = accounted_405b_plan();
  // 128 units over 128 virtual stages: 8 a stage, less the embedding on 0 and the loss on 15
  const std::vector<int> expected = {7, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 7};
  EXPECT_EQ(accounted_stage_layers(126, p), expected);
  p.stage_layers = expected;
  EXPECT_EQ(chunk_layer_count(m, p, 0, 0), 0);  // the embedding alone
  EXPECT_EQ(chunk_layer_count(m, p, 0, 1), 1);
  EXPECT_EQ(chunk_layer_count(m, p, 15, 7), 0);  // the loss alone
  EXPECT_EQ(chunk_layer_count(m, p, 15, 6), 1);
  EXPECT_EQ(chunk_layer_count(m, p, 7, 0), 1);
  // model chunk c * 16 + i: round 0 holds stages 1-15's one layer each (layers 0-14), so stage
  // 0's second chunk starts at layer 15 and stage 1's first at layer 0; the 111 chunks before
  // stage 15's seventh hold 110 layers, and the model's last layer is stage 14's last chunk
  EXPECT_EQ(chunk_first_layer(m, p, 1, 0), 0);
  EXPECT_EQ(chunk_first_layer(m, p, 0, 1), 15);
  EXPECT_EQ(chunk_first_layer(m, p, 15, 6), 110);
  EXPECT_EQ(chunk_first_layer(m, p, 14, 7), 125);
  std::multiset<std::int64_t> seen;
  for (int i = 0; i < p.pp; ++i)
    for (int c = 0; c < p.virtual_stages; ++c)
      for (std::int64_t k = 0; k < chunk_layer_count(m, p, i, c); ++k) seen.insert(chunk_first_layer(m, p, i, c) + k);
  ASSERT_EQ(seen.size(), 126u);
  for (std::int64_t l = 0; l < 126; ++l) EXPECT_EQ(seen.count(l), 1u) << l;
  // 4 virtual stages (the FP8-CS recipe): 2 units each, stage 0 runs chunks of 1, 2, 2, 2
  p.virtual_stages = 4;
  EXPECT_EQ(accounted_stage_layers(126, p), expected);
  EXPECT_EQ(chunk_layer_count(m, p, 0, 0), 1);
  EXPECT_EQ(chunk_layer_count(m, p, 0, 3), 2);
  EXPECT_EQ(chunk_layer_count(m, p, 15, 3), 1);
  // 126 + 1 (the embedding alone) does not divide into 128: no split
  p.virtual_stages = 8;
  p.account_for_loss_in_pipeline_split = false;
  EXPECT_TRUE(accounted_stage_layers(126, p).empty());
}

// Loaded: the split resolves the stages' layers, the step graph runs the empty virtual stages
// (the embedding's, the loss's) and the memory model holds 7 layers and the embedding on the
// first stage: its parameters by hand, in bf16 with TP 4 (Llama 3.1 405B: a layer's matrices
// 16384 x (16384 + 2 x 1024 + 16384) + 3 x 16384 x 53248 = 3,187,671,040, its two norms
// 2 x 16384; the word embedding 128,256 x 16,384 = 2,101,346,304).
TEST(StageLayers, TheAccountedSplitLoadsSimulatesAndHoldsTheEmbeddingOnTheFirstStage) {
  const Scenario s = load_scenario_file(
      std::string(TWINSIM_SOURCE_DIR) + "/scenarios/validation/training/megatron-bridge-llama31-405b-gb200-26.02.yaml",
      {"training.precision=bf16"});
  const std::vector<int> expected = {7, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 7};
  EXPECT_EQ(s.plan.stage_layers, expected);
  const std::int64_t layer_on_gpu = 3187671040 / 4 + 2 * 16384;
  const std::int64_t first_stage = 7 * layer_on_gpu + 2101346304 / 4;
  const MemoryReport m = predict_memory(s);
  ASSERT_EQ(m.stages.size(), 16u);
  EXPECT_EQ(m.stages[0].breakdown.params, 2 * first_stage);
  EXPECT_EQ(m.stages[7].breakdown.params, 2 * 8 * layer_on_gpu);
  EXPECT_GT(predict_training(s).step_s, 0);
}

}  // namespace
}  // namespace twinsim
