// RoPE under YaRN as Megatron-core runs it (models/layer_ops.cpp, rope_rotation): the eager
// rotation of rope_utils.py's _apply_rotary_pos_emb_bshd, 12 passes over Q and K forward and 13
// backward, where plain RoPE is one fused kernel (a read and a write). Bytes derived by hand on
// gpt-oss-120b's attention at TP 1: 4,096 tokens x (64 Q heads + 8 K heads) x 64 wide x 2 B.
#include <gtest/gtest.h>

#include <algorithm>

#include "models/layer_ops.hpp"
#include "models/op_names.hpp"
#include "scenario/errors.hpp"
#include "scenario/load.hpp"
#include "sim/memory/activations.hpp"
#include "sim/training/layer_costs.hpp"

namespace twinsim {
namespace {

Scenario gpt_oss(const std::string& model_keys) {
  return load_scenario_text(R"(
model: {hf_config: gpt-oss-120b)" +
                            model_keys + R"(}
cluster: dgx-h100
stack: {preset: megatron-core}
training: {seq_len: 4096, global_batch: 1280, micro_batch: 1, precision: bf16, optimizer: adam}
plan: {tp: 1, pp: 4, dp: 16, ep: 8, expert_tp: 1, zero: 1, recompute: none}
)");
}

const LayerOp& rope_of(const std::vector<LayerOp>& ops) {
  const auto it =
      std::find_if(ops.begin(), ops.end(), [](const LayerOp& op) { return op.name == op_names::kAttnRope; });
  EXPECT_NE(it, ops.end());
  return *it;
}

std::vector<LayerOp> ops_of(const Scenario& s) {
  return build_layer_ops(s.model, 0, s.plan, training_shape(*s.training, s.stack));
}

constexpr std::int64_t kQk = 4096LL * (64 + 8) * 64 * 2;  // 37,748,736 B: Q and K once

TEST(YarnRope, ConfigJsonRopeTypeYarnIsRead) {
  EXPECT_EQ(gpt_oss("").model.rope_scaling, RopeScaling::yarn);  // rope_scaling.rope_type: yarn
  // Llama 3.1's rope_type llama3 only rescales the frequencies
  const Scenario llama = load_scenario_text(R"(
model: llama-3.1-405b
cluster: dgx-h100
training: {seq_len: 4096, global_batch: 64, micro_batch: 1, precision: bf16, optimizer: adam}
plan: {tp: 8, pp: 1, dp: 1}
)");
  EXPECT_EQ(llama.model.rope_scaling, RopeScaling::none);
}

TEST(YarnRope, EagerRotationMovesQAndKTwelveTimesForwardThirteenBackward) {
  const LayerOp& yarn = rope_of(ops_of(gpt_oss("")));
  EXPECT_EQ(yarn.fwd_bytes, 12 * kQk);  // 452,984,832
  EXPECT_EQ(yarn.bwd_bytes, 13 * kQk);  // 490,733,568
  EXPECT_TRUE(yarn.saved.empty());      // cos and sin are constants: nothing kept
  // the same model with plain RoPE: the fused kernel reads and writes Q and K once
  const LayerOp& plain = rope_of(ops_of(gpt_oss(", rope_scaling: none")));
  EXPECT_EQ(plain.fwd_bytes, 2 * kQk);  // 75,497,472
  EXPECT_EQ(plain.bwd_bytes, 0);        // the element-wise default: twice the forward
}

TEST(YarnRope, TheBackwardIsPricedAtItsOwnBytes) {
  const LayerCost cost = cost_layer(gpt_oss(""), 0);
  const auto it =
      std::find_if(cost.ops.begin(), cost.ops.end(), [](const OpTime& op) { return op.name == op_names::kAttnRope; });
  ASSERT_NE(it, cost.ops.end());
  EXPECT_DOUBLE_EQ(it->fwd_bytes, 12.0 * kQk);
  EXPECT_DOUBLE_EQ(it->dgrad_bytes, 13.0 * kQk);
  // same streaming rate both ways: the backward takes 13/12 of the forward
  EXPECT_NEAR(it->dgrad_s / it->fwd_s, 13.0 / 12.0, 0.02);
}

TEST(YarnRope, MlaKeepsItsFusedKernel) {
  // DeepSeek-V3's config.json says rope_scaling.type: yarn; MLA's RoPE part stays one fused pass
  const Scenario s = load_scenario_text(R"(
model: deepseek-v3
cluster: dgx-h100
training: {seq_len: 4096, global_batch: 64, micro_batch: 1, precision: bf16, optimizer: adam}
plan: {tp: 8, pp: 1, dp: 8, ep: 8, sequence_parallel: true, zero: 1}
)");
  EXPECT_EQ(s.model.rope_scaling, RopeScaling::yarn);
  const LayerOp& rope = rope_of(ops_of(s));
  // 16 local heads + the shared key, 64 RoPE columns each, read and written once
  EXPECT_EQ(rope.fwd_bytes, 2LL * 4096 * (128 / 8 + 1) * 64 * 2);
  EXPECT_EQ(rope.bwd_bytes, 0);
}

TEST(YarnRope, YarnNeedsRope) {
  try {
    load_scenario_text(R"(
model: {layers: 2, hidden: 256, heads: 4, vocab: 1000, position: learned, tied_embeddings: true, bias: true,
        rope_scaling: yarn}
cluster: dgx-h100
training: {seq_len: 512, global_batch: 8, micro_batch: 1, precision: bf16, optimizer: adam}
plan: {tp: 1, pp: 1, dp: 8}
)");
    FAIL() << "accepted rope_scaling yarn on learned positions";
  } catch (const ScenarioError& e) {
    EXPECT_NE(std::string(e.what()).find("model.rope_scaling"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace twinsim
