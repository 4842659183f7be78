// FP8 training as Transformer Engine runs it (sim/training/layer_costs.cpp): only the
// layers' linear GEMMs (and a multi-token-prediction module's) run in fp8, each after a cast of
// its 16-bit activation operand; attention, norms, element-wise ops, the TP collectives and the
// head stay in bf16.
// Expected figures derived by hand from the op shapes and the GPU's figures.
#include <gtest/gtest.h>

#include <string>

#include "scenario/load.hpp"
#include "sim/cost/compute_cost.hpp"
#include "sim/memory/memory_report.hpp"
#include "sim/memory/weights.hpp"
#include "sim/training/layer_costs.hpp"
#include "sim/training/training_report.hpp"

namespace twinsim {
namespace {

// GPT-3-like layer on one node: 2048 tokens, hidden 4096, TP 2.
Scenario gpt_on(const std::string& cluster, const std::string& precision) {
  const std::string text = R"(
model: {layers: 4, hidden: 4096, heads: 32, vocab: 51200, max_seq_len: 2048}
cluster: )" + cluster + R"(
training: {seq_len: 2048, global_batch: 8, micro_batch: 1, precision: )" + precision + R"(}
plan: {tp: 2, pp: 1, dp: 1}
)";
  return load_scenario_text(text, {});
}

Scenario h100_gpt(const std::string& precision) { return gpt_on("dgx-h100", precision); }

const OpTime& op_named(const LayerCost& c, const std::string& name) {
  for (const OpTime& op : c.ops)
    if (op.name == name) return op;
  throw std::runtime_error("no op " + name);
}

// The catalog's Hopper GPUs keep each layer weight's fp8 transpose beside its fp8 copy (their
// fp8 GEMMs take only the TN layout), the B200 the copy alone: on the same plan the H100's
// params are the bf16 model plus 2 bytes per layer weight-matrix parameter, the B200's plus 1.
// 4 layers of 4 x 4096^2 + 2 x 4 x 4096^2 (GeLU FFN, 4h), TP 2: 12 x 4096^2 x 4 / 2 each GPU.
TEST(Fp8Training, HopperKeepsTheFp8WeightsTransposeTooTheB200DoesNot) {
  const Scenario h100 = h100_gpt("fp8");
  const Scenario bf16 = h100_gpt("bf16");
  const Scenario b200 = gpt_on("dgx-b200", "fp8");
  EXPECT_TRUE(h100.cluster.gpu.fp8_gemm_tn_only);
  EXPECT_FALSE(b200.cluster.gpu.fp8_gemm_tn_only);
  const std::int64_t matrices = 12LL * 4096 * 4096 * 4 / 2;
  auto params = [](const Scenario& s) { return predict_memory(s).stages[0].breakdown.params; };
  EXPECT_EQ(params(h100) - params(bf16), 2 * matrices);
  EXPECT_EQ(params(b200) - params(bf16), matrices);
}

TEST(Fp8Training, OnlyTheLayersGemmsChangeType) {
  const LayerCost fp8 = cost_layer(h100_gpt("fp8"), 0);
  const LayerCost bf16 = cost_layer(h100_gpt("bf16"), 0);
  for (const OpTime& op : bf16.ops) {
    if (op.name.find("qkv") != std::string::npos || op.name.find("proj") != std::string::npos ||
        op.name.find("fc") != std::string::npos)
      continue;
    // attention, norms, element-wise ops and the TP collectives: bf16 either way
    EXPECT_DOUBLE_EQ(op_named(fp8, op.name).fwd_s, op.fwd_s) << op.name;
    EXPECT_DOUBLE_EQ(op_named(fp8, op.name).dgrad_s, op.dgrad_s) << op.name;
  }
  // the output layer is not a TE module: its GEMMs stay bf16
  const LayerCost head8 = cost_head(h100_gpt("fp8"));
  const LayerCost head16 = cost_head(h100_gpt("bf16"));
  ASSERT_EQ(head8.ops.size(), head16.ops.size());
  for (std::size_t i = 0; i < head8.ops.size(); ++i) EXPECT_DOUBLE_EQ(head8.ops[i].fwd_s, head16.ops[i].fwd_s);
}

// A multi-token-prediction module (DeepSeek-V3 §2.2) runs its projection and transformer block in
// fp8 as the layers do, its shared output head in bf16 as the main head (DeepSeek-V3 §3.3.1;
// Megatron-core's MTP layer inside its fp8 context). On a B200 (no power-limit curve: the GEMM
// clock is 1 in every op list) the block's GEMMs in the head's list cost exactly what the same
// GEMMs cost in a layer's list at the block's index (layers + 0), and mtp.logits what head.logits
// costs. Priced in bf16 as the head's list was before, the block's GEMMs differ from the layer's
// (no cast, the bf16 curve).
TEST(Fp8Training, AnMtpModuleRunsItsBlockInFp8AndItsHeadInBf16) {
  const Scenario s = load_scenario_text(R"(
model: {layers: 2, hidden: 1024, heads: 8, vocab: 32000, max_seq_len: 2048, mtp_layers: 1,
        moe: {experts: 8, top_k: 2, expert_ffn_hidden: 1024}}
cluster: dgx-b200
training: {seq_len: 2048, global_batch: 8, micro_batch: 1, precision: fp8}
plan: {tp: 1, pp: 1, dp: 1}
)",
                                        {});
  const LayerCost head = cost_head(s);
  const LayerCost block = cost_layer(s, s.model.layers);  // the module's block: layer index layers + 0
  ASSERT_DOUBLE_EQ(head.gemm_clock, 1.0);
  ASSERT_DOUBLE_EQ(block.gemm_clock, 1.0);
  int gemms = 0;
  for (const OpTime& op : block.ops) {
    if (op.tensor_s <= 0) continue;  // the GEMMs (and attention): tensor-core time
    const OpTime& mtp = op_named(head, "mtp." + op.name);
    EXPECT_DOUBLE_EQ(mtp.fwd_s, op.fwd_s) << op.name;
    EXPECT_DOUBLE_EQ(mtp.dgrad_s, op.dgrad_s) << op.name;
    EXPECT_DOUBLE_EQ(mtp.wgrad_s, op.wgrad_s) << op.name;
    ++gemms;
  }
  EXPECT_GE(gemms, 5);  // attention's projections, the router, the experts' up and down
  EXPECT_DOUBLE_EQ(op_named(head, "mtp.logits").fwd_s, op_named(head, "head.logits").fwd_s);
  EXPECT_DOUBLE_EQ(op_named(head, "mtp.logits").dgrad_s, op_named(head, "head.logits").dgrad_s);
}

TEST(Fp8Training, AnFp8GemmPaysTheCastOfItsActivationOperand) {
  const Scenario s = h100_gpt("fp8");
  const GpuSpec& gpu = s.cluster.gpu;
  const LayerCost layer = cost_layer(s, 0);
  const OpTime& fc1 = op_named(layer, "mlp.fc1");
  // fc1 on this GPU: [2048 tokens, 4096] x [4096, 16384 / 2]
  const std::int64_t m = 2048, k = 4096, n = 8192;
  ComputeOp gemm = gemm_op(Dtype::fp8, m, n, k);
  gemm.clock_scale = layer.gemm_clock;  // the power limit's, from the layer's mix
  gemm.bytes = static_cast<double>(2 * m * k + 2 * k * n + 2 * m * n);  // bf16 operands in HBM
  // the cast reads the bf16 input (2 bytes) and writes it twice in fp8 (1 + 1 bytes)
  const double cast_fwd = 4.0 * m * k / (gpu.hbm_bandwidth_Bps * gpu.kernel_memory_efficiency("fp8_cast", false, 4.0 * m * k, Dtype::bf16)) +
                          gpu.kernel_launch_s;
  EXPECT_NEAR(fc1.fwd_s, op_cost(gpu, gemm).time_s() + cast_fwd, 1e-9);
  // backward: the output gradient [m, n] cast once before dgrad and wgrad
  const double cast_bwd = 4.0 * m * n / (gpu.hbm_bandwidth_Bps * gpu.kernel_memory_efficiency("fp8_cast", true, 4.0 * m * n, Dtype::bf16)) +
                          gpu.kernel_launch_s;
  ComputeOp dgrad = gemm_op(Dtype::fp8, m, k, n);
  dgrad.clock_scale = layer.gemm_clock;
  dgrad.bytes = gemm.bytes;
  dgrad.pass = GemmPass::dgrad;
  EXPECT_NEAR(fc1.dgrad_s, op_cost(gpu, dgrad).time_s() + cast_bwd, 1e-9);
  // a 16-bit run pays no cast
  const LayerCost layer_bf16 = cost_layer(h100_gpt("bf16"), 0);
  const OpTime& fc1_bf16 = op_named(layer_bf16, "mlp.fc1");
  ComputeOp bf = gemm_op(Dtype::bf16, m, n, k);
  bf.clock_scale = layer_bf16.gemm_clock;
  EXPECT_NEAR(fc1_bf16.fwd_s, op_cost(gpu, bf).time_s(), 1e-9);
}

TEST(Fp8Training, TheStepIsFasterThanBf16ButFarFromTwice) {
  // fp8 doubles the GEMM peak only; the rest of the layer is unchanged
  const double fp8 = predict_training(h100_gpt("fp8")).step_s;
  const double bf16 = predict_training(h100_gpt("bf16")).step_s;
  EXPECT_LT(fp8, bf16);
  EXPECT_GT(fp8, 0.5 * bf16);
}

}  // namespace
}  // namespace twinsim
