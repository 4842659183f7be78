// The two copies around a served MoE layer's grouped GEMMs (sim/inference/iteration_ops.cpp
// routed_rows_copy): the tokens' rows out to their top_k experts' rows before them
// (TensorRT-LLM's expandInputRowsKernel), each token's top_k output rows summed back after them
// (finalizeMoeRoutingKernel; vLLM's moe_sum). Checked by hand on two catalog models.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "serving_scenarios.hpp"
#include "sim/inference/iteration_cost.hpp"
#include "sim/inference/iteration_ops.hpp"

namespace twinsim {
namespace {

const LayerOp* find_op(const std::vector<LayerOp>& ops, const char* name) {
  for (const LayerOp& op : ops)
    if (op.name == name) return &op;
  return nullptr;
}

// Qwen3-30B-A3B (h 2048, top 8 of 128) served in NVFP4 on one B200, a decode step of 1,024
// sequences: 1,024 x 8 = 8,192 routed rows. Each copy reads or writes every routed row once and
// each token's row once, in the 16-bit activations an NVFP4 checkpoint computes in:
// (8,192 + 1,024) x 2,048 x 2 = 37,748,736 bytes.
TEST(MoeRoutedCopies, EachCopyMovesEveryRoutedRowAndEveryTokenRowOnce) {
  const Scenario s = test::serving_scenario("qwen3-30b-a3b", "dgx-b200", 1, 1, 1, 1024, 128, 128, "nvfp4", "fp8");
  const auto ops = build_iteration_layer_ops(s.model, 0, s.plan, *s.inference, decode_shape(1024, 200));
  for (const char* name : {"moe.permute", "moe.unpermute"}) {
    const LayerOp* copy = find_op(ops, name);
    ASSERT_NE(copy, nullptr) << name;
    EXPECT_EQ(copy->fwd_bytes, 37748736) << name;
    EXPECT_EQ(copy->weight_bytes, 0) << name;
  }
}

// Mixtral 8x7B (h 4096, top 2) at TP 2, a prefill of 4 prompts of 512: 2,048 tokens, 4,096 routed
// rows; the experts are TP-sharded, the rows are not: (4,096 + 2,048) x 4,096 x 2 = 50,331,648.
// The permute comes before the experts' first GEMM, the unpermute after their last.
TEST(MoeRoutedCopies, TheCopiesFrameTheExpertsGemmsUnderTensorParallelism) {
  const Scenario s = test::serving_scenario("mixtral-8x7b", "dgx-h100", 2, 2, 1, 4, 512, 128);
  const auto ops = build_iteration_layer_ops(s.model, 0, s.plan, *s.inference, prefill_shape(4, 512));
  EXPECT_EQ(find_op(ops, "moe.permute")->fwd_bytes, 50331648);
  auto at = [&](const char* name) { return find_op(ops, name) - ops.data(); };
  EXPECT_LT(at("moe.permute"), at("moe.experts.gate_up"));
  EXPECT_GT(at("moe.unpermute"), at("moe.experts.down"));
}

// A dense model's layers have neither copy; in a MoE layer the two take at least their two
// launches (the catalog's kernel_launch_us, 4 us on a B200) and at most their bytes at a tenth of
// the HBM peak beside them (op_times: one layer's call of each).
TEST(MoeRoutedCopies, OnlyMoeLayersCopyAndEachCopyCostsAtLeastALaunch) {
  const Scenario dense = test::serving_scenario("llama3-8b", "dgx-h100", 1, 1, 1, 64, 128, 128);
  const auto dense_ops = build_iteration_layer_ops(dense.model, 0, dense.plan, *dense.inference, decode_shape(64, 200));
  EXPECT_EQ(find_op(dense_ops, "moe.permute"), nullptr);
  EXPECT_EQ(find_op(dense_ops, "moe.unpermute"), nullptr);
  const Scenario s = test::serving_scenario("qwen3-30b-a3b", "dgx-b200", 1, 1, 1, 1024, 128, 128, "nvfp4", "fp8");
  double copies_s = 0;
  for (const PassOpTime& op : ServingCostModel(s).op_times(decode_shape(1024, 200)))
    if (op.name.rfind("moe.permute", 0) == 0 || op.name.rfind("moe.unpermute", 0) == 0) copies_s += op.time_s;
  const double launches_s = 2.0 * s.cluster.gpu.kernel_launch_s;
  EXPECT_GT(copies_s, launches_s);
  EXPECT_LT(copies_s, launches_s + 2.0 * 37748736 / (0.1 * s.cluster.gpu.hbm_bandwidth_Bps));
}

}  // namespace
}  // namespace twinsim
