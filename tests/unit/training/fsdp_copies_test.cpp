// FSDP2's copies on the compute stream (stack.fsdp_copies, sim/training/fsdp_copies.hpp): each
// gather's copy-out into the unsharded parameters and each reduce-scatter's copy-in of the bf16
// gradients into its fp32 input. Byte counts by hand below.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>

#include "models/op_names.hpp"
#include "scenario/load.hpp"
#include "sim/training/layer_costs.hpp"
#include "sim/training/training_report.hpp"

namespace twinsim {
namespace {

// Llama-3-8B on one DGX H100 (700 W), FSDP over 8 GPUs (or 4 x PP 2), bf16 with FSDP2's fp32
// reduce, 8 micro-batches of 1 x 4096 a GPU; `stack`: the stack's extra keys.
Scenario llama8b(const std::string& stack, int pp = 1, const std::string& recompute = "none") {
  const int dp = 8 / pp;
  const std::string text =
      "model: llama3-8b\n"
      "cluster: {preset: dgx-h100, nodes: 1}\n"
      "stack: {grad_reduce_fp32: true" +
      stack +
      "}\n"
      "training: {seq_len: 4096, global_batch: " +
      std::to_string(8 * dp) +
      ", micro_batch: 1, precision: bf16}\n"
      "plan: {tp: 1, pp: " +
      std::to_string(pp) + ", dp: " + std::to_string(dp) + ", zero: 3, recompute: " + recompute + "}\n";
  return load_scenario_text(text);
}

std::optional<OpTime> copies_row(const LayerCost& cost) {
  const auto it = std::find_if(cost.ops.begin(), cost.ops.end(),
                               [](const OpTime& op) { return op.name == op_names::kDpFsdpCopies; });
  if (it == cost.ops.end()) return std::nullopt;
  return *it;
}

// A Llama-3-8B layer: q and o 4096 x 4096 (16,777,216 each), k and v 4096 x 1024 (4,194,304
// each), gate, up and down 4096 x 14336 (58,720,256 each), two norms of 4096: 218,112,000
// parameters. The forward's copy-out reads and writes them in bf16: 872,448,000 bytes; the
// backward's re-gather the same, and the reduce-scatter's copy-in reads 2 and writes 4 bytes
// each: 1,308,672,000, so 2,181,120,000 in all. At the H100's 3.35 TB/s x 0.85 (the catalog's
// memory-bound figure) the forward's copy takes 0.3064 ms.
TEST(FsdpCopies, AGatherCopiesTheLayerOutAndAReduceScatterCopiesItsGradientsIn) {
  const LayerCost cost = cost_layer(llama8b(", fsdp_copies: true"), 0);
  const std::optional<OpTime> row = copies_row(cost);
  ASSERT_TRUE(row.has_value());
  EXPECT_DOUBLE_EQ(row->fwd_bytes, 872448000.0);
  EXPECT_DOUBLE_EQ(row->dgrad_bytes, 872448000.0 + 1308672000.0);
  EXPECT_NEAR(row->fwd_s, 872448000.0 / (3.35e12 * 0.85), 0.03 * row->fwd_s);
  EXPECT_NEAR(row->dgrad_s / row->fwd_s, 2181120000.0 / 872448000.0, 0.02);
  EXPECT_EQ(row->category, TimeCategory::compute);
  // off by default, and nothing to copy where the parameters are not sharded
  EXPECT_FALSE(copies_row(cost_layer(llama8b(""), 0)).has_value());
  Scenario zero1 = llama8b(", fsdp_copies: true");
  zero1.plan.zero = 1;
  EXPECT_FALSE(copies_row(cost_layer(zero1, 0)).has_value());
}

// Under PP as torchtitan runs it (fsdp_pp_keep_gathered) a stage gathers its layers once a step
// and reduce-scatters them once: the 8 micro-batches share one copy-out (109,056,000 bytes each)
// and one copy-in (163,584,000).
TEST(FsdpCopies, KeptGatheredUnderPipelineParallelismOnceAStep) {
  const LayerCost cost = cost_layer(llama8b(", fsdp_copies: true, fsdp_pp_keep_gathered: true", 2), 0);
  const std::optional<OpTime> row = copies_row(cost);
  ASSERT_TRUE(row.has_value());
  EXPECT_DOUBLE_EQ(row->fwd_bytes, 872448000.0 / 8);
  EXPECT_DOUBLE_EQ(row->dgrad_bytes, 1308672000.0 / 8);
}

// The copies run on the compute stream: the step takes about the 32 layers' copies longer (8
// micro-batches, each layer's forward and backward rows), nothing hides them.
TEST(FsdpCopies, TheStepWaitsForTheCopies) {
  const Scenario with = llama8b(", fsdp_copies: true"), without = llama8b("");
  const std::optional<OpTime> row = copies_row(cost_layer(with, 0));
  ASSERT_TRUE(row.has_value());
  const double copies_s = 8 * 32 * (row->fwd_s + row->dgrad_s);
  const double added_s = predict_training(with).step_s - predict_training(without).step_s;
  std::printf("copies %.4f s, step longer by %.4f s\n", copies_s, added_s);
  EXPECT_NEAR(added_s / copies_s, 1.0, 0.10);
}

}  // namespace
}  // namespace twinsim
