// The MoE layer's memory-bound passes besides its GEMMs and all-to-alls, against bytes derived
// by hand: the dispatcher's token moves (permute, the regrouping of received chunks by local
// expert and back, unpermute) on Qwen3-30B-A3B's shape (hidden 2048, 128 experts, top-8) at
// 4,096 tokens a micro-batch, the fp8 experts' padding copies on the same shape, and gpt-oss's
// clamped activation (swiglu_limit 7: hidden 2880, 128 experts of width 2880, top-4) on EP 8.
#include <gtest/gtest.h>

#include <algorithm>

#include "models/layer_ops.hpp"
#include "models/moe_host_calls.hpp"
#include "models/op_names.hpp"
#include "scenario/load.hpp"
#include "sim/memory/activations.hpp"
#include "sim/training/layer_costs.hpp"

namespace twinsim {
namespace {

Scenario qwen3_30b(int ep) {
  return load_scenario_text(R"(
model: {hf_config: qwen3-235b-a22b, layers: 48, hidden: 2048, heads: 32, kv_heads: 4, head_dim: 128,
        ffn_hidden: 6144, moe: {expert_ffn_hidden: 768}}
cluster: dgx-h100
stack: {preset: none}
training: {seq_len: 4096, global_batch: 1024, micro_batch: 1, precision: bf16, optimizer: adam}
plan: {tp: 1, pp: 1, dp: 128, ep: )" + std::to_string(ep) + R"(, expert_tp: 1, zero: 1, recompute: none}
)");
}

Scenario gpt_oss(const std::string& recompute) {
  return load_scenario_text(R"(
model: gpt-oss-120b
cluster: dgx-h100
stack: {preset: megatron-core}
training: {seq_len: 4096, global_batch: 1280, micro_batch: 1, precision: bf16, optimizer: adam}
plan: {tp: 1, pp: 4, dp: 16, ep: 8, expert_tp: 1, zero: 1, )" + recompute + R"(}
)");
}

std::vector<LayerOp> ops_of(const Scenario& s) {
  return build_layer_ops(s.model, 0, s.plan, training_shape(*s.training, s.stack));
}

const LayerOp* find(const std::vector<LayerOp>& ops, std::string_view name) {
  const auto it = std::find_if(ops.begin(), ops.end(), [&](const LayerOp& op) { return op.name == name; });
  return it == ops.end() ? nullptr : &*it;
}

const OpTime& priced(const LayerCost& cost, std::string_view name) {
  const auto it = std::find_if(cost.ops.begin(), cost.ops.end(), [&](const OpTime& op) { return op.name == name; });
  EXPECT_NE(it, cost.ops.end()) << name;
  return *it;
}

constexpr std::int64_t kTokensBytes = 4096LL * 2048 * 2;      // the rank's own tokens, bf16
constexpr std::int64_t kRoutedBytes = 4096LL * 8 * 2048 * 2;  // their 8 routed copies each

TEST(MoeTokenMoves, PermuteRegroupAndUnpermuteMoveTheRoutedRows) {
  const std::vector<LayerOp> ops = ops_of(qwen3_30b(8));
  // permute: the tokens read, their copies written; unpermute the other way
  ASSERT_NE(find(ops, op_names::kMoePermute), nullptr);
  EXPECT_EQ(find(ops, op_names::kMoePermute)->fwd_bytes, kTokensBytes + kRoutedBytes);  // 150,994,944
  EXPECT_EQ(find(ops, op_names::kMoeUnpermute)->fwd_bytes, kTokensBytes + kRoutedBytes);
  // 16 local experts: the received rows (balanced: as many as sent) read and written, twice
  EXPECT_EQ(find(ops, op_names::kMoeSortChunks)->fwd_bytes, 2 * kRoutedBytes);  // 268,435,456
  EXPECT_EQ(find(ops, op_names::kMoeUnsortChunks)->fwd_bytes, 2 * kRoutedBytes);
  // each backward moves what its forward did
  EXPECT_EQ(find(ops, op_names::kMoePermute)->bwd_bytes, kTokensBytes + kRoutedBytes);
  EXPECT_EQ(find(ops, op_names::kMoeSortChunks)->bwd_bytes, 2 * kRoutedBytes);
}

TEST(MoeTokenMoves, NoRegroupWithoutEpOrWithOneLocalExpert) {
  for (const int ep : {1, 128}) {
    const std::vector<LayerOp> ops = ops_of(qwen3_30b(ep));
    EXPECT_NE(find(ops, op_names::kMoePermute), nullptr) << ep;
    EXPECT_EQ(find(ops, op_names::kMoeSortChunks), nullptr) << ep;
    EXPECT_EQ(find(ops, op_names::kMoeUnsortChunks), nullptr) << ep;
  }
}

TEST(MoeTokenMoves, BackwardPricedAtItsOwnBytes) {
  const LayerCost cost = cost_layer(qwen3_30b(8), 0);
  const OpTime& permute = priced(cost, op_names::kMoePermute);
  EXPECT_DOUBLE_EQ(permute.dgrad_bytes, permute.fwd_bytes);  // not twice, as an activation's
  EXPECT_GT(permute.dgrad_s, 0.0);
  EXPECT_NEAR(permute.dgrad_s, permute.fwd_s, 1e-12);
}

// Qwen3-30B-A3B on EP 8 under the megatron-core stack at `precision`, `stack_keys` added.
Scenario qwen3_30b_megatron(const std::string& precision, const std::string& stack_keys = "") {
  return load_scenario_text(R"(
model: {hf_config: qwen3-235b-a22b, layers: 48, hidden: 2048, heads: 32, kv_heads: 4, head_dim: 128,
        ffn_hidden: 6144, moe: {expert_ffn_hidden: 768}}
cluster: dgx-h100
stack: {preset: megatron-core)" +
                            stack_keys + R"(}
training: {seq_len: 4096, global_batch: 1024, micro_batch: 1, precision: )" +
                            precision + R"(, optimizer: adam}
plan: {tp: 1, pp: 2, dp: 8, ep: 8, expert_tp: 1, zero: 1, recompute: none}
)");
}

std::ptrdiff_t position(const std::vector<LayerOp>& ops, std::string_view name) {
  const auto it = std::find_if(ops.begin(), ops.end(), [&](const LayerOp& op) { return op.name == name; });
  EXPECT_NE(it, ops.end()) << name;
  return it - ops.begin();
}

constexpr const char* kCopies = ", moe_padding_copies: true";

// fp8: Megatron-core's TEGroupedMLP pads each local expert's rows to 16 (Transformer Engine's
// Fp8Padding, one fused row copy) before the grouped GEMMs and unpads their output (Fp8Unpadding)
// after: each reads and writes the 32,768 routed rows of 2,048 bf16 values once, 134,217,728 B,
// and its backward is the same copy the other way.
TEST(MoePaddingCopies, Fp8ExpertsCopyTheirRowsOutPaddedAndBack) {
  const std::vector<LayerOp> ops = ops_of(qwen3_30b_megatron("fp8", kCopies));
  const LayerOp* pad = find(ops, op_names::kMoeExpertsPad);
  const LayerOp* unpad = find(ops, op_names::kMoeExpertsUnpad);
  ASSERT_NE(pad, nullptr);
  ASSERT_NE(unpad, nullptr);
  EXPECT_EQ(pad->fwd_bytes, 2 * kRoutedBytes);  // 268,435,456
  EXPECT_EQ(pad->bwd_bytes, 2 * kRoutedBytes);
  EXPECT_EQ(unpad->fwd_bytes, 2 * kRoutedBytes);
  EXPECT_EQ(unpad->bwd_bytes, 2 * kRoutedBytes);
  EXPECT_TRUE(pad->saved.empty());
  // between the regrouped rows and the experts' first GEMM, and after the second one
  EXPECT_EQ(position(ops, op_names::kMoeExpertsPad), position(ops, op_names::kMoeSortChunks) + 1);
  EXPECT_EQ(position(ops, op_names::kMoeExpertsGateUp), position(ops, op_names::kMoeExpertsPad) + 1);
  EXPECT_EQ(position(ops, op_names::kMoeExpertsUnpad), position(ops, op_names::kMoeExpertsDown) + 1);
  EXPECT_EQ(position(ops, op_names::kMoeUnsortChunks), position(ops, op_names::kMoeExpertsUnpad) + 1);
  // priced at its own backward bytes; its host calls are the grouped GEMMs' rows' padding
  const OpTime& priced_pad = priced(cost_layer(qwen3_30b_megatron("fp8", kCopies), 0), op_names::kMoeExpertsPad);
  EXPECT_DOUBLE_EQ(priced_pad.dgrad_bytes, 2.0 * kRoutedBytes);
  EXPECT_GT(priced_pad.fwd_s, 0.0);
  const auto calls = megatron_core_moe_host_calls(op_names::kMoeExpertsPad, 16, true);
  ASSERT_TRUE(calls.has_value());
  EXPECT_EQ(calls->fwd.torch_ops + calls->bwd.torch_ops + calls->fwd.gemm_launches, 0);
}

// 16-bit GEMMs need no alignment, and where the counts arrive aligned (HybridEP's dispatch, the
// router's padding: stack.moe_padding_copies false, the default) the experts copy nothing.
TEST(MoePaddingCopies, NoneInBf16OrWhereTheCountsArriveAligned) {
  EXPECT_EQ(find(ops_of(qwen3_30b_megatron("bf16", kCopies)), op_names::kMoeExpertsPad), nullptr);
  EXPECT_EQ(find(ops_of(qwen3_30b_megatron("bf16", kCopies)), op_names::kMoeExpertsUnpad), nullptr);
  EXPECT_EQ(find(ops_of(qwen3_30b_megatron("fp8")), op_names::kMoeExpertsPad), nullptr);
  EXPECT_EQ(find(ops_of(qwen3_30b_megatron("fp8")), op_names::kMoeExpertsUnpad), nullptr);
  EXPECT_FALSE(qwen3_30b_megatron("fp8").stack.moe_padding_copies);  // the preset leaves it off
  EXPECT_TRUE(qwen3_30b_megatron("fp8", kCopies).stack.moe_padding_copies);
}

// gpt-oss, EP 8: 4,096 x 4 = 16,384 rows a rank; gate and up halves 16,384 x 2 x 2,880 x 2 B.
constexpr std::int64_t kBothHalves = 16384LL * 2 * 2880 * 2;  // 188,743,680 B

TEST(MoeActivationClamp, ClampsReadAndWriteBothHalvesTwice) {
  const Scenario s = gpt_oss("recompute: none");
  EXPECT_DOUBLE_EQ(s.model.activation_clamp, 7.0);  // config.json's swiglu_limit
  const std::vector<LayerOp> ops = ops_of(s);
  const LayerOp* clamp = find(ops, op_names::kMoeExpertsActClamp);
  ASSERT_NE(clamp, nullptr);
  EXPECT_EQ(clamp->fwd_bytes, 4 * kBothHalves);  // two clamps, then the cat
  EXPECT_EQ(clamp->bwd_bytes, 5 * kBothHalves);  // the clamps' grads (3), the chunk's grad (2)
  ASSERT_EQ(clamp->saved.size(), 1U);
  EXPECT_EQ(clamp->saved[0].bytes, kBothHalves);  // the unclamped input, for the mask
  // a model without a clamp has no such pass
  EXPECT_EQ(find(ops_of(qwen3_30b(8)), op_names::kMoeExpertsActClamp), nullptr);
}

TEST(MoeActivationClamp, RecomputedWithTheActivation) {
  const std::vector<LayerOp> ops = ops_of(gpt_oss("recompute: selective, recompute_modules: [moe_act]"));
  const LayerOp* clamp = find(ops, op_names::kMoeExpertsActClamp);
  ASSERT_NE(clamp, nullptr);
  EXPECT_TRUE(clamp->recomputed);
  EXPECT_TRUE(clamp->saved.empty());
}

// gpt-oss's experts carry biases: Megatron-core adds the second one outside the grouped GEMM,
// weighted by the router probability, in eager passes (experts.py TEGroupedMLP._apply_bias).
// EP 8: 16,384 rows a rank of 2,880 bf16 values.
constexpr std::int64_t kExpertRows = 16384LL * 2880 * 2;  // 94,371,840 B

TEST(MoeExpertBias, WeightedBiasAddMovesTheRowsSixTimesForwardEightBackward) {
  const Scenario s = gpt_oss("recompute: selective, recompute_modules: [moe_act]");
  ASSERT_TRUE(s.model.bias);
  const std::vector<LayerOp> ops = ops_of(s);
  const LayerOp* bias = find(ops, op_names::kMoeExpertsBias);
  ASSERT_NE(bias, nullptr);
  // b * p written; t and it read, the sum written; the experts' chunks concatenated
  EXPECT_EQ(bias->fwd_bytes, 6 * kExpertRows);  // 566,231,040
  // the split's grads assembled (2); grad b and grad p: a product written, then reduced (3 each)
  EXPECT_EQ(bias->bwd_bytes, 8 * kExpertRows);  // 754,974,720
  // after the down GEMM, outside the checkpointed activation
  EXPECT_FALSE(bias->recomputed);
  EXPECT_TRUE(bias->saved.empty());
  // it follows the down GEMM and comes before the rows are unsorted
  const auto at = [&](std::string_view name) { return find(ops, name) - ops.data(); };
  EXPECT_EQ(at(op_names::kMoeExpertsBias), at(op_names::kMoeExpertsDown) + 1);
  EXPECT_EQ(at(op_names::kMoeUnsortChunks), at(op_names::kMoeExpertsBias) + 1);
  const OpTime& priced_bias = priced(cost_layer(s, 1), op_names::kMoeExpertsBias);
  EXPECT_DOUBLE_EQ(priced_bias.dgrad_bytes, 8.0 * kExpertRows);  // its own backward, not twice the forward's
  EXPECT_GT(priced_bias.fwd_s, 0.0);
}

TEST(MoeExpertBias, NoPassWithoutExpertBiases) {
  const Scenario s = qwen3_30b(8);
  ASSERT_FALSE(s.model.bias);
  EXPECT_EQ(find(ops_of(s), op_names::kMoeExpertsBias), nullptr);
}

}  // namespace
}  // namespace twinsim
