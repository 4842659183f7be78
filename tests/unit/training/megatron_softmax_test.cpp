// Megatron's FusedScaleMaskSoftmax rule (models/megatron_softmax.hpp) and its fallback's price
// on the unfused attention core (sim/training/layer_costs.cpp add_softmax_fallback).
#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "models/megatron_softmax.hpp"
#include "models/op_names.hpp"
#include "scenario/load.hpp"
#include "sim/training/layer_costs.hpp"
#include "sim/validate/vtrain_csv.hpp"
#include "tests/unit/scenario/expect_refused.hpp"
#include "tests/unit/scenario/words.hpp"

namespace twinsim {
namespace {

SoftmaxShape softmax_scores(Dtype dtype, std::int64_t b, std::int64_t np, std::int64_t s) {
  return {dtype, b, np, s, s};
}

TEST(MegatronSoftmaxRule, EightWayOneSequenceOfSixteenHeadsFallsBack) {
  // vTrain's GPTs have 16 heads: np = 16 / tp; b x np = 2 at tp 8, b 1 (not a multiple of 4)
  EXPECT_FALSE(fused_softmax_runs(kMegatron2023Softmax, softmax_scores(Dtype::fp16, 1, 2, 1024)));
  EXPECT_FALSE(fused_softmax_runs(kMegatron2021Softmax, softmax_scores(Dtype::fp16, 1, 2, 1024)));
  EXPECT_FALSE(fused_softmax_runs(kMegatron2021Softmax, softmax_scores(Dtype::fp16, 1, 6, 1024)));  // 48 heads / 8
  EXPECT_TRUE(fused_softmax_runs(kMegatron2021Softmax, softmax_scores(Dtype::fp16, 2, 6, 2048)));   // 12
  EXPECT_TRUE(fused_softmax_runs(kMegatron2023Softmax, softmax_scores(Dtype::fp16, 2, 2, 1024)));   // 4
  EXPECT_TRUE(fused_softmax_runs(kMegatron2023Softmax, softmax_scores(Dtype::fp16, 1, 4, 1024)));   // tp 4
  EXPECT_TRUE(fused_softmax_runs(kMegatron2023Softmax, softmax_scores(Dtype::bf16, 1, 4, 1024)));
  EXPECT_FALSE(fused_softmax_runs(kMegatron2023Softmax, softmax_scores(Dtype::fp32, 1, 4, 1024)));  // fp16/bf16 only
  // the op list's kernel at every shape
  EXPECT_TRUE(fused_softmax_runs(kKernelSoftmax, softmax_scores(Dtype::fp16, 1, 2, 1024)));
  EXPECT_TRUE(fused_softmax_runs(kKernelSoftmax, softmax_scores(Dtype::fp32, 1, 1, 8)));
}

TEST(MegatronSoftmaxRule, EachReleaseHasItsOwnKeyBoundAndBlockRule) {
  // 2255b61: 16 < sk <= 4096; 6985e58 (2021): 16 < sk <= 2048
  EXPECT_TRUE(fused_softmax_runs(kMegatron2023Softmax, softmax_scores(Dtype::fp16, 1, 4, 4096)));
  EXPECT_FALSE(fused_softmax_runs(kMegatron2021Softmax, softmax_scores(Dtype::fp16, 1, 4, 4096)));
  EXPECT_TRUE(fused_softmax_runs(kMegatron2021Softmax, softmax_scores(Dtype::fp16, 1, 4, 2048)));
  EXPECT_FALSE(fused_softmax_runs(kMegatron2023Softmax, softmax_scores(Dtype::fp16, 1, 4, 8192)));
  EXPECT_FALSE(fused_softmax_runs(kMegatron2023Softmax, softmax_scores(Dtype::fp16, 1, 4, 16)));  // sk > 16
  // up to 128 keys 2255b61's causal kernel takes two rows a warp: 4 warps x 2 = 8 batches a
  // block (get_batch_per_block), so b x np = 4 falls back there; the 2021 rule has no such check
  EXPECT_FALSE(fused_softmax_runs(kMegatron2023Softmax, softmax_scores(Dtype::fp16, 1, 4, 128)));
  EXPECT_TRUE(fused_softmax_runs(kMegatron2023Softmax, softmax_scores(Dtype::fp16, 2, 4, 128)));
  EXPECT_TRUE(fused_softmax_runs(kMegatron2021Softmax, softmax_scores(Dtype::fp16, 1, 4, 128)));
  // sq % 4 (and sk % 4 at 2255b61)
  EXPECT_FALSE(fused_softmax_runs(kMegatron2023Softmax, softmax_scores(Dtype::fp16, 1, 4, 1022)));
}

// A vTrain row's layer (GPT, 16 heads, seq 1024, fp16, unfused attention) on the catalog's DGX
// A100 under `stack`.
LayerCost vtrain_gpt_layer(int tp, int micro_batch, const StackSpec& stack) {
  VtrainRow r;
  r.gpus = tp, r.global_batch = 2 * micro_batch, r.micro_batch = micro_batch, r.hidden = 1024, r.heads = 16;
  r.layers = 24, r.seq_len = 1024, r.tp = tp, r.dp = 1, r.pp = 1;
  return cost_layer(vtrain_scenario(r, catalog_cluster("dgx-a100-80gb"), stack), 0);
}

const OpTime& attention_core_of(const LayerCost& c) {
  for (const OpTime& op : c.ops)
    if (op.name == op_names::kAttnCore) return op;
  ADD_FAILURE() << "no attention core";
  return c.ops.front();
}

TEST(MegatronSoftmaxFallback, PricesTheFp32OpsWhereTheRuleRefusesTheKernel) {
  const StackSpec megatron = catalog_stack("megatron-eager");
  ASSERT_EQ(megatron.softmax, kMegatron2023Softmax);
  StackSpec kernel = megatron;
  kernel.softmax = std::string(kKernelSoftmax);
  const OpTime fallback = attention_core_of(vtrain_gpt_layer(8, 1, megatron)),
               fused = attention_core_of(vtrain_gpt_layer(8, 1, kernel));
  // b x np x sq x sk = 1 x 2 x 1024 x 1024 scores; the fallback moves 36 - 4 bytes a score more
  // forward (cast 6, scale 8, mask fill 8, softmax 8, cast 6, against the kernel's 4) and
  // 40 - 6 backward (casts 6 + 6, softmax 12, mask 8, scale 8, against the kernel's 6)
  const double n = 2.0 * 1024 * 1024;
  EXPECT_DOUBLE_EQ(fallback.fwd_bytes - fused.fwd_bytes, 32 * n);
  EXPECT_DOUBLE_EQ(fallback.dgrad_bytes - fused.dgrad_bytes, 34 * n);
  EXPECT_EQ(fallback.fwd_launches - fused.fwd_launches, 4);
  EXPECT_EQ(fallback.dgrad_launches - fused.dgrad_launches, 4);
  // 4 more dispatched calls a pass at megatron-eager's host_torch_op_us, 9.49 us
  EXPECT_NEAR(fallback.fwd_host_s - fused.fwd_host_s, 4 * 9.49e-6, 1e-12);
  EXPECT_NEAR(fallback.bwd_host_s - fused.bwd_host_s, 4 * 9.49e-6, 1e-12);
  // the device's extra time: no faster than the A100-80GB's 2.039 TB/s HBM, no slower than half
  // of it plus 10 us a launch
  const double extra = fallback.fwd_s - fused.fwd_s;
  EXPECT_GT(extra, 32 * n / 2.039e12);
  EXPECT_LT(extra, 32 * n / (0.5 * 2.039e12) + 4 * 10e-6);
}

TEST(MegatronSoftmaxFallback, KernelShapesAndOtherStacksAreUnchanged) {
  const StackSpec megatron = catalog_stack("megatron-eager");
  StackSpec kernel = megatron;
  kernel.softmax = std::string(kKernelSoftmax);
  for (const auto& [tp, mb] : {std::pair{8, 2}, std::pair{4, 1}, std::pair{1, 1}}) {
    const OpTime a = attention_core_of(vtrain_gpt_layer(tp, mb, megatron)),
                 b = attention_core_of(vtrain_gpt_layer(tp, mb, kernel));
    EXPECT_DOUBLE_EQ(a.fwd_s, b.fwd_s) << tp << " " << mb;
    EXPECT_DOUBLE_EQ(a.fwd_host_s, b.fwd_host_s) << tp << " " << mb;
  }
  // megatron-core's attention is Transformer Engine's; its preset overrides the rule
  EXPECT_EQ(catalog_stack("megatron-core").softmax, kKernelSoftmax);
  EXPECT_EQ(catalog_stack("megatron-2021").softmax, kMegatron2021Softmax);
  EXPECT_EQ(catalog_stack("torchtitan").softmax, kKernelSoftmax);
}

TEST(MegatronSoftmaxFallback, RefusedWithoutACallCostOrAnUnknownRule) {
  const auto build = [](const std::string& sets) {
    const std::string text = R"(
model: gpt3-175b
cluster: dgx-a100-80gb
training: {seq_len: 2048, global_batch: 8, micro_batch: 1, precision: fp16}
plan: {tp: 8, pp: 1, dp: 1, flash_attention: false}
stack: megatron-eager
)";
    return load_scenario_text(text, test::words(sets));
  };
  test::expect_refused(build, {{"stack.host_torch_op_us=0", "needs host_torch_op_us above 0"},
                               {"stack.softmax=megatron_2022", "megatron_2022"}});
}

}  // namespace
}  // namespace twinsim
