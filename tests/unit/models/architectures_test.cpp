// MLA, sliding windows, QK-norm, sandwich norms and the MoE options on a tiny model whose
// figures are derived by hand in the comments (no formula checked against itself).
#include <gtest/gtest.h>

#include "models/head_ops.hpp"
#include "models/layer_ops.hpp"
#include "models/op_names.hpp"
#include "models/param_count.hpp"
#include "tests/unit/memory/test_models.hpp"

namespace twinsim {
namespace {

using test::tiny_mla;

TEST(Architectures, MlaParametersByHand) {
  // Q: 64x16 + norm 16 + 16x(4x12) = 1024 + 16 + 768 = 1808
  // KV: 64x(8+4) + norm 8 + 8x(4x(8+6)) = 768 + 8 + 448 = 1224; O: (4x6)x64 = 1536
  const LayerParams p = layer_params(tiny_mla(), 0);
  EXPECT_EQ(p.attention, 1808 + 1224 + 1536);
  EXPECT_EQ(p.norms, 2 * 64);
  EXPECT_EQ(p.dense_ffn, 3 * 64 * 128);
  // 2 x 29272 + embedding 6400 + output 6400 + final norm 64
  EXPECT_EQ(count_params(tiny_mla()).total, 2 * 29272 + 6400 + 6400 + 64);
}

TEST(Architectures, MlaWithoutQueryBottleneck) {
  ModelSpec m = tiny_mla();
  m.mla->q_lora_rank = 0;  // DeepSeek-V2-Lite: W_Q 64 x (4 x 12)
  EXPECT_EQ(layer_params(m, 0).attention, 64 * 48 + 1224 + 1536);
}

TEST(Architectures, MlaAttentionFlopsUseBothHeadWidths) {
  Plan plan;
  MicroBatchShape mb{1, 32, Dtype::bf16};
  double core = 0;
  bool saw_kv_up = false;
  for (const LayerOp& op : build_layer_ops(tiny_mla(), 0, plan, mb)) {
    if (op.name == std::string_view(op_names::kAttnCore)) core = op.fwd_flops;
    if (op.name == std::string_view(op_names::kAttnKvUp)) {
      saw_kv_up = true;
      EXPECT_EQ(op.n, 4 * (8 + 6));  // every head's K_nope and V from the latent
      EXPECT_EQ(op.k, 8);
    }
  }
  // 2 x tokens x keys x heads x (Q/K width 12 + V width 6) = 2 x 32 x 32 x 4 x 18
  EXPECT_DOUBLE_EQ(core, 2.0 * 32 * 32 * 4 * 18);
  EXPECT_TRUE(saw_kv_up);
}

TEST(Architectures, QkNormAndSandwichNormParameters) {
  ModelSpec m = tiny_mla();
  m.mla.reset();
  m.head_dim = 16, m.kv_heads = 2;
  const std::int64_t plain = layer_params(m, 0).norms;
  m.qk_norm = true;  // one 16-wide scale for Q, one for K
  EXPECT_EQ(layer_params(m, 0).norms, plain + 32);
  m.sandwich_norm = true;  // two more 64-wide RMSNorms
  EXPECT_EQ(layer_params(m, 0).norms, plain + 32 + 128);
  m.qkv_bias = true;  // Q (64) + K (32) + V (32) biases, none on O
  const std::int64_t attention = layer_params(m, 0).attention;
  m.qkv_bias = false;
  EXPECT_EQ(attention - layer_params(m, 0).attention, 64 + 32 + 32);
}

TEST(Architectures, MoeSharedWidthGateRouterBias) {
  ModelSpec m = test::tiny_moe();  // 8 experts of width 32, top 2
  m.moe->shared_experts = 1, m.moe->shared_expert_ffn_hidden = 96, m.moe->shared_expert_gate = true;
  m.moe->router_bias = true;
  const LayerParams p = layer_params(m, 0);
  EXPECT_EQ(p.router, 64 * 8 + 8);
  EXPECT_EQ(p.shared_experts, 3 * 64 * 96 + 64);  // one expert of width 96 + the [64 -> 1] gate
  EXPECT_EQ(p.routed_experts, 8 * 3 * 64 * 32);
  EXPECT_EQ(p.active_experts, 2 * 3 * 64 * 32);
}

TEST(Architectures, MoeImbalanceSizesTheBusiestExpert) {
  ModelSpec m = test::tiny_moe();  // 8 experts of width 32, top 2
  Plan plan;
  MicroBatchShape mb{1, 64, Dtype::bf16};
  auto rows = [&] {
    for (const LayerOp& op : build_layer_ops(m, 0, plan, mb))
      if (op.name == std::string_view(op_names::kMoeExpertsGateUp)) return op.m;
    return std::int64_t{-1};
  };
  EXPECT_EQ(rows(), 64 * 2 / 8);  // 16 tokens per expert on average
  m.moe->imbalance = 1.5;
  EXPECT_EQ(rows(), 24);
}

TEST(Architectures, WindowSpanByHand) {
  ModelSpec m = tiny_mla();
  m.sliding_window = 8;
  // s <= window: the whole sequence
  EXPECT_EQ(m.window_span(8), 8);
  // s = 16: pairs in the window 8x9/2 + 8x8 = 100 of the causal 16x17/2 = 136: 16 x 100/136 = 11.8
  EXPECT_EQ(m.window_span(16), 12);
  // Mistral 7B v0.1 at 8k: 4096 of 8192 -> 8192 x (4096x4097/2 + 4096^2) / (8192x8193/2) = 6143.6
  m.sliding_window = 4096;
  EXPECT_EQ(m.window_span(8192), 6144);
}

TEST(Architectures, WindowPatternAndMixedSpan) {
  ModelSpec m = tiny_mla();
  m.mla.reset();
  m.layers = 4, m.sliding_window = 8, m.global_every = 2;  // Gemma 2: layers 0, 2 windowed
  EXPECT_TRUE(m.is_windowed_layer(0));
  EXPECT_FALSE(m.is_windowed_layer(1));
  EXPECT_TRUE(m.is_windowed_layer(2));
  EXPECT_DOUBLE_EQ(m.windowed_share(false), 0.5);
  m.global_every = 6, m.layers = 12;  // Gemma 3: layers 5 and 11 global
  EXPECT_FALSE(m.is_windowed_layer(5));
  EXPECT_TRUE(m.is_windowed_layer(6));
  EXPECT_DOUBLE_EQ(m.windowed_share(false), 10.0 / 12);
  // the op list prices one layer per kind at the mix: 0.5 x 12 + 0.5 x 16 = 14 keys per query
  m.layers = 4, m.global_every = 2;
  Plan plan;
  for (const LayerOp& op : build_layer_ops(m, 0, plan, MicroBatchShape{1, 16, Dtype::bf16}))
    if (op.name == std::string_view(op_names::kAttnCore)) { EXPECT_EQ(op.kv_len, 14); }
}

TEST(Architectures, MultiTokenPredictionRunsInTheHead) {
  ModelSpec m = tiny_mla();
  m.moe = MoeSpec{};
  m.moe->experts = 4, m.moe->top_k = 2, m.moe->expert_ffn_hidden = 32;
  Plan plan;
  const MicroBatchShape mb{1, 16, Dtype::bf16};
  const double plain = forward_flops(build_head_ops(m, plan, mb));
  m.mtp_layers = 1;
  const std::vector<LayerOp> ops = build_head_ops(m, plan, mb);
  // + one MoE block (layer index 2, past the model's 2) + the [2h -> h] projection
  // 2 x 16 x 64 x 128 + the module's own logits 2 x 16 x 100 x 64
  const double block = forward_flops(build_layer_ops(m, 2, plan, mb));
  EXPECT_DOUBLE_EQ(forward_flops(ops), plain + block + 2.0 * 16 * 64 * 128 + 2.0 * 16 * 100 * 64);
  int prefixed = 0;
  for (const LayerOp& op : ops) prefixed += op.name.substr(0, 4) == "mtp." ? 1 : 0;
  // the block's ops, and two norms, the projection, the logits and the loss
  EXPECT_EQ(prefixed, static_cast<int>(build_layer_ops(m, 2, plan, mb).size()) + 5);
}

}  // namespace
}  // namespace twinsim
