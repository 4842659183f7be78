// plan.recompute_modules (Megatron-core's --recompute-modules): what each module drops from a
// layer's saved activations and runs again, against byte counts derived by hand from
// gpt-oss-120b's config (hidden 2880, 128 experts of width 2880, top-4; 64 query heads and 8
// KV heads of 64; models/catalog/hf/gpt-oss-120b.json) and DeepSeek-V3's MLA.
#include <gtest/gtest.h>

#include <algorithm>

#include "models/layer_ops.hpp"
#include "models/op_names.hpp"
#include "scenario/load.hpp"

namespace twinsim {
namespace {

Scenario gpt_oss(const std::string& recompute_modules) {
  std::vector<std::string> sets = {"plan.recompute=selective"};
  if (!recompute_modules.empty()) sets.push_back("plan.recompute_modules=" + recompute_modules);
  return load_scenario_text(R"(
model: gpt-oss-120b
cluster: dgx-h100
stack: megatron-core
training: {seq_len: 4096, global_batch: 64, micro_batch: 1, precision: bf16}
plan: {tp: 1, pp: 4, dp: 16, ep: 8, zero: 1}
)",
                            sets);
}

const LayerOp& op(const std::vector<LayerOp>& ops, std::string_view name) {
  const auto it = std::find_if(ops.begin(), ops.end(), [&](const LayerOp& o) { return o.name == name; });
  EXPECT_NE(it, ops.end()) << name;
  return *it;
}

std::vector<LayerOp> moe_layer(const Scenario& s) {
  return build_layer_ops(s.model, 1, s.plan, {1, 4096, Dtype::bf16});
}

constexpr std::int64_t kTokens = 4096, kHidden = 2880, kTopK = 4, kExpertWidth = 2880;

// moe_act: the experts' SwiGLU output, top-4 x 4096 rows of 2880 bf16 values, is no longer
// kept (the down GEMM's input); the activation runs again in the backward. gpt-oss clamps the
// activation's inputs first (swiglu_limit), inside the checkpointed function: the clamps'
// unclamped input, both halves (top-4 x 4096 rows of 2 x 2880 bf16), goes too.
constexpr std::int64_t kClampInput = kTopK * kTokens * 2 * kExpertWidth * 2;  // 188,743,680

TEST(RecomputeModules, MoeActDropsTheExpertsActivationOutput) {
  const std::vector<LayerOp> core = moe_layer(gpt_oss(""));
  const std::vector<LayerOp> act = moe_layer(gpt_oss("[core_attn, moe_act]"));
  EXPECT_EQ(saved_bytes(core) - saved_bytes(act), kTopK * kTokens * kExpertWidth * 2 + kClampInput);  // 283,115,520 B
  EXPECT_TRUE(op(act, op_names::kMoeExpertsAct).recomputed);
  EXPECT_FALSE(op(core, op_names::kMoeExpertsAct).recomputed);
}

// layernorm: both norms' outputs, 4096 x 2880 bf16 each (the QKV GEMM's and the router's
// input), are recomputed from the norms' inputs, which stay.
TEST(RecomputeModules, LayernormDropsBothNormOutputs) {
  const std::vector<LayerOp> core = moe_layer(gpt_oss(""));
  const std::vector<LayerOp> norms = moe_layer(gpt_oss("[core_attn, layernorm]"));
  EXPECT_EQ(saved_bytes(core) - saved_bytes(norms), 2 * kTokens * kHidden * 2);  // 47,185,920
  EXPECT_TRUE(op(norms, op_names::kAttnNorm).recomputed);
  EXPECT_TRUE(op(norms, op_names::kMlpNorm).recomputed);
}

// A list without core_attn recomputes no attention: with flash attention the kernel's
// logsumexp, fp32 per head and token (64 x 4096 x 4 B), is kept again.
TEST(RecomputeModules, ListWithoutCoreAttnKeepsTheAttention) {
  const std::vector<LayerOp> core = moe_layer(gpt_oss(""));
  const std::vector<LayerOp> act = moe_layer(gpt_oss("[moe_act]"));
  EXPECT_FALSE(op(act, op_names::kAttnCore).recomputed);
  EXPECT_EQ(saved_bytes(core) - saved_bytes(act), kTopK * kTokens * kExpertWidth * 2 + kClampInput - 64 * kTokens * 4);
}

// mla_up_proj: core attention keeps no Q, K, V (DeepSeek-V3: 128 heads of 192-wide Q and K and
// 128-wide V, TP 2: 64 heads here), rebuilt from the latents in the backward.
TEST(RecomputeModules, MlaUpProjDropsQueriesKeysAndValues) {
  auto deepseek = [](const std::string& modules) {
    return load_scenario_text(R"(
model: deepseek-v3
cluster: dgx-h100
training: {seq_len: 4096, global_batch: 1024, micro_batch: 1, precision: bf16}
plan: {tp: 2, pp: 8, dp: 64, ep: 64, expert_tp: 1, sequence_parallel: true, zero: 1, recompute: selective,
       stage_layers: [7, 8, 8, 8, 8, 8, 8, 6]}
)",
                              {"plan.recompute_modules=" + modules});
  };
  const Scenario base = deepseek("[core_attn]"), up = deepseek("[core_attn, mla_up_proj]");
  const std::vector<LayerOp> a = build_layer_ops(base.model, 5, base.plan, {1, 4096, Dtype::bf16});
  const std::vector<LayerOp> b = build_layer_ops(up.model, 5, up.plan, {1, 4096, Dtype::bf16});
  EXPECT_EQ(saved_bytes(a) - saved_bytes(b), kTokens * 64 * (192 + 192 + 128) * 2);
  EXPECT_TRUE(op(b, op_names::kAttnKvUp).recomputed);
}

TEST(RecomputeModules, RefusedWhereMegatronRefusesOrNotModelled) {
  auto refusal = [](const std::vector<std::string>& sets) -> std::string {
    try {
      load_scenario_text("model: gpt-oss-120b\ncluster: dgx-h100\ntraining: {seq_len: 4096, global_batch: 64}\n"
                         "plan: {pp: 4, dp: 16, ep: 8}\n",
                         sets);
    } catch (const ScenarioError& e) {
      return e.what();
    }
    return "accepted";
  };
  EXPECT_NE(refusal({"plan.recompute_modules=[moe_act]"}).find("needs plan.recompute: selective"), std::string::npos);
  EXPECT_NE(refusal({"plan.recompute=selective", "plan.recompute_modules=[moe]"}).find("not modelled"), std::string::npos);
  EXPECT_NE(refusal({"plan.recompute=selective", "plan.recompute_modules=[mla_up_proj]"}).find("model.mla"),
            std::string::npos);
  EXPECT_NE(refusal({"plan.recompute=selective", "plan.recompute_modules=[moe_ac]"}).find("did you mean 'moe_act'"),
            std::string::npos);
  EXPECT_EQ(refusal({"plan.recompute=selective", "plan.recompute_modules=[layernorm, moe_act]"}), "accepted");
}

}  // namespace
}  // namespace twinsim
