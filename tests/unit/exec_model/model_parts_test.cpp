// Pieces of the executor's model checked against independent code: the vocab-parallel
// cross-entropy against the kernels' fused one, the plan-independent initialisation
// against slicing the full matrix by hand, and the parameter count against the simulator's.
#include <gtest/gtest.h>

#include <random>

#include "exec/model/device_tokens.hpp"
#include "exec/model/loss.hpp"
#include "exec/model/transformer.hpp"
#include "exec/model/weights.hpp"
#include "kernels/cpu/loss.hpp"
#include "models/param_count.hpp"
#include "tiny_models.hpp"

namespace twinsim::exec {
namespace {

// The model's loss runs through the current backend on device buffers (the strict-device
// backend too): copies in, the table's stages, copies out.
TEST(ExecModelLoss, VocabParallelCrossEntropyMatchesKernelOnOneRank) {
  const int tokens = 6, vocab = 11;
  std::mt19937 rng(5);
  std::normal_distribution<float> n(0.0f, 2.0f);
  std::vector<float> logits(tokens * vocab);
  for (float& x : logits) x = n(rng);
  std::vector<int> targets = {0, 10, 3, 3, 7, 1};
  Backend& device = current_backend();
  Tensor d_logits = Tensor::uninitialized(MemCategory::activations, logits.size());
  Tensor d_lse = Tensor::uninitialized(MemCategory::activations, tokens);
  device.copy_to_device(d_logits.data(), logits.data(), d_logits.bytes());
  const DeviceTokens d_targets(device, targets.data(), tokens);
  const float ours = vocab_parallel_cross_entropy(ModelContext{}, Pass::fwd, d_logits.data(), d_targets.get(), d_lse.data(),
                                                  tokens, vocab, 0);
  std::vector<float> lse_kernel(tokens);
  const float reference = kernels::cpu::cross_entropy_forward(logits.data(), targets.data(), lse_kernel.data(),
                                                              tokens, vocab);
  EXPECT_NEAR(ours, reference, 1e-5f);
  // in place, as the head does
  device.kernels().vocab_parallel_loss_backward(d_logits.data(), d_targets.get(), d_lse.data(), 0.5f, d_logits.data(),
                                                tokens, vocab, 0);
  std::vector<float> d_ours(tokens * vocab), d_kernel(tokens * vocab);
  device.copy_to_host(d_ours.data(), d_logits.data(), d_logits.bytes());
  kernels::cpu::cross_entropy_backward(logits.data(), targets.data(), lse_kernel.data(), 0.5f, d_kernel.data(),
                                       tokens, vocab);
  for (int i = 0; i < tokens * vocab; ++i) EXPECT_NEAR(d_ours[i], d_kernel[i], 1e-6f) << i;
}

TEST(ExecModelWeights, ShardsAreSlicesOfTheSameFullMatrix) {
  ParamSpec rows{"w.rows", 4, 3, Shard::rows};
  ParamSpec cols{"w.cols", 2, 4, Shard::cols};
  const std::vector<float> full_rows = full_initial_value(rows, 9);
  const std::vector<float> full_cols = full_initial_value(cols, 9);
  // rows split: rank 1 of 2 holds rows 2..3
  const std::vector<float> r1 = take_shard(full_rows, rows, 2, 1);
  ASSERT_EQ(r1.size(), 6u);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(r1[i], full_rows[6 + i]);
  // column split: rank 1 of 2 holds columns 2..3 of each row
  const std::vector<float> c1 = take_shard(full_cols, cols, 2, 1);
  ASSERT_EQ(c1.size(), 4u);
  EXPECT_EQ(c1[0], full_cols[2]);
  EXPECT_EQ(c1[1], full_cols[3]);
  EXPECT_EQ(c1[2], full_cols[6]);
  EXPECT_EQ(c1[3], full_cols[7]);
  // the same name and seed give the same values; another name does not
  EXPECT_EQ(full_rows, full_initial_value(rows, 9));
  ParamSpec other = rows;
  other.name = "w.other";
  EXPECT_NE(full_rows, full_initial_value(other, 9));
}

// A routed expert's matrix under an expert TP of its own (ParamSpec::shard_ways): split that
// many ways, TP rank r holding shard r % ways, and put back where it came from.
TEST(ExecModelWeights, ExpertShardsFollowTheExpertTp) {
  ParamSpec rows{"w.rows", 4, 3, Shard::rows};
  rows.shard_ways = 2;  // expert TP 2 inside TP 4
  const std::vector<float> full = full_initial_value(rows, 9);
  EXPECT_EQ(shard_count(rows, 4), 6);
  const std::vector<float> r3 = take_shard(full, rows, 4, 3);  // rank 3 -> shard 1: rows 2..3
  ASSERT_EQ(r3.size(), 6u);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(r3[i], full[6 + i]);
  std::vector<float> back(full.size(), 0.0f);
  put_shard(r3.data(), rows, 4, 3, back);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(back[6 + i], full[6 + i]);
  EXPECT_EQ(back[0], 0.0f);
  rows.shard_ways = 1;  // expert TP 1 under TP 2: every rank holds it whole
  EXPECT_EQ(take_shard(full, rows, 2, 1), full);
  EXPECT_EQ(shard_count(rows, 2), 12);
}

TEST(ExecModelWeights, InitialValuesHaveTheRequestedSpread) {
  ParamSpec big{"w.big", 200, 100, Shard::none, Init::normal, 0.02f};
  const std::vector<float> v = full_initial_value(big, 1);
  double sum = 0, sq = 0;
  for (float x : v) sum += x, sq += double(x) * x;
  const double mean = sum / v.size(), sd = std::sqrt(sq / v.size() - mean * mean);
  EXPECT_NEAR(mean, 0.0, 0.001);  // 4 standard errors of 0.02/sqrt(20000)
  EXPECT_NEAR(sd, 0.02, 0.0005);
}

// The executor's parameters, counted from its own blocks, equal the simulator's formula.
TEST(ExecModelWeights, ParameterCountMatchesModelsParamCount) {
  for (TransformerConfig c : {test::tiny_gpt_config(), test::tiny_llama_config()}) {
    TransformerStage stage(c);
    std::int64_t n = 0;
    for (ParamBlock* b : stage.blocks()) n += static_cast<std::int64_t>(b->used_size());
    EXPECT_EQ(n, count_params(c.model).total) << c.model.name;
  }
}

}  // namespace
}  // namespace twinsim::exec
