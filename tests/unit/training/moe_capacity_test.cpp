// Token dropping (model.moe.capacity_factor, pad_to_capacity), router imbalance and where the
// router's probabilities are applied (stack.moe_probs_in_activation), against numbers derived by
// hand for Qwen3-30B-A3B's shape (hidden 2048, 128 experts of width 768, top-8) on EP 8:
// 4,096 tokens a micro-batch, 32,768 routed rows a rank when balanced, 16 local experts.
#include <gtest/gtest.h>

#include <algorithm>

#include "models/layer_ops.hpp"
#include "models/op_names.hpp"
#include "scenario/load.hpp"
#include "sim/memory/activations.hpp"
#include "sim/training/training_report.hpp"

namespace twinsim {
namespace {

Scenario qwen3_30b(const std::vector<std::string>& sets = {}, const std::string& stack = "{preset: none}") {
  return load_scenario_text(R"(
model: {hf_config: qwen3-235b-a22b, layers: 48, hidden: 2048, heads: 32, kv_heads: 4, head_dim: 128,
        ffn_hidden: 6144, moe: {expert_ffn_hidden: 768}}
cluster: dgx-h100
stack: )" + stack + R"(
training: {seq_len: 4096, global_batch: 1024, micro_batch: 1, precision: bf16, optimizer: adam}
plan: {tp: 1, pp: 2, dp: 8, ep: 8, expert_tp: 1, zero: 1, recompute: none}
)",
                            sets);
}

std::vector<LayerOp> ops_of(const Scenario& s) {
  return build_layer_ops(s.model, 0, s.plan, training_shape(*s.training, s.stack));
}

const LayerOp& find(const std::vector<LayerOp>& ops, std::string_view name) {
  const auto it = std::find_if(ops.begin(), ops.end(), [&](const LayerOp& op) { return op.name == name; });
  EXPECT_NE(it, ops.end()) << name;
  return *it;
}

std::int64_t saved(const LayerOp& op, std::string_view name) {
  for (const SavedTensor& t : op.saved)
    if (t.name == name) return t.bytes;
  return 0;
}

constexpr std::int64_t kHidden = 2048, kLocalExperts = 128 / 8;

// The experts' rows on the busiest rank and the bytes its dispatch sends: rows x hidden x 2 B.
void expect_rows(const Scenario& s, std::int64_t rows) {
  const std::vector<LayerOp> ops = ops_of(s);
  EXPECT_EQ(find(ops, op_names::kMoeExpertsGateUp).m * kLocalExperts, rows);
  EXPECT_EQ(find(ops, op_names::kMoeExpertsGateUp).count, kLocalExperts);
  EXPECT_EQ(find(ops, op_names::kMoeDispatch).fwd_comm.bytes, rows * kHidden * 2);
  EXPECT_EQ(find(ops, op_names::kMoeCombine).fwd_comm.bytes, rows * kHidden * 2);
}

TEST(MoeCapacity, BusiestExpertSetsTheRows) {
  expect_rows(qwen3_30b(), 32768);                                 // 4,096 x 8, balanced
  expect_rows(qwen3_30b({"model.moe.imbalance=1.5"}), 49152);      // the busiest at 1.5 x the mean
  // dropping caps the busiest at capacity_factor x the mean: 1.25 x 32,768
  expect_rows(qwen3_30b({"model.moe.imbalance=1.5", "model.moe.capacity_factor=1.25"}), 40960);
  expect_rows(qwen3_30b({"model.moe.capacity_factor=1.25"}), 32768);  // under capacity: nothing dropped
  // padded to capacity: every expert runs 1.25 x the mean, balanced or not
  expect_rows(qwen3_30b({"model.moe.capacity_factor=1.25", "model.moe.pad_to_capacity=true"}), 40960);
}

TEST(MoeCapacity, PaddingNeedsACapacityFactor) {
  EXPECT_THROW(qwen3_30b({"model.moe.pad_to_capacity=true"}), ScenarioError);
}

// Padding is work the model's FLOPs do not count (nor do dropped tokens change them).
TEST(MoeCapacity, ModelFlopsIgnoreDropsAndPadding) {
  const TrainingPrediction plain = predict_training(qwen3_30b());
  const TrainingPrediction padded =
      predict_training(qwen3_30b({"model.moe.capacity_factor=2", "model.moe.pad_to_capacity=true"}));
  EXPECT_DOUBLE_EQ(plain.throughput.model_tflops_per_gpu * plain.step_s,
                   padded.throughput.model_tflops_per_gpu * padded.step_s);
  EXPECT_GT(padded.step_s, plain.step_s);
}

// Megatron-core >= 0.13 weights the experts' activation by the probabilities: the combine keeps
// no output rows (32,768 x 2,048 x 2 B = 134,217,728) but the activation keeps the rows' fp32
// probabilities (32,768 x 4 B = 131,072); the backward's transient tensors are the same.
TEST(MoeProbsInActivation, KeepsProbabilitiesNotOutputRows) {
  const Scenario before = qwen3_30b();
  const Scenario after = qwen3_30b({"stack.moe_probs_in_activation=true"});
  const std::vector<LayerOp> a = ops_of(before), b = ops_of(after);
  EXPECT_EQ(saved(find(a, op_names::kMoeExpertsDown), "output"), 134217728);
  EXPECT_EQ(saved(find(a, op_names::kMoeExpertsAct), "probs"), 0);
  EXPECT_EQ(saved(find(b, op_names::kMoeExpertsDown), "output"), 0);
  EXPECT_EQ(saved(find(b, op_names::kMoeExpertsAct), "probs"), 131072);
  EXPECT_EQ(saved_bytes(a) - saved_bytes(b), 134217728 - 131072);
  const LayerActivations ka = layer_activations(before.model, before.plan, training_shape(*before.training, before.stack));
  const LayerActivations kb = layer_activations(after.model, after.plan, training_shape(*after.training, after.stack));
  EXPECT_EQ(ka.moe - kb.moe, 134217728 - 131072);
  EXPECT_EQ(ka.moe_backward, kb.moe_backward);
  // the megatron-core preset sets it
  EXPECT_TRUE(qwen3_30b({}, "megatron-core").stack.moe_probs_in_activation);
  EXPECT_FALSE(qwen3_30b().stack.moe_probs_in_activation);
}

}  // namespace
}  // namespace twinsim
