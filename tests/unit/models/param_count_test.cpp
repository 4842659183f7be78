// Parameter counts computed from catalog architectures against published totals.
#include <gtest/gtest.h>

#include "models/param_count.hpp"
#include "scenario/load.hpp"

namespace twinsim {
namespace {

std::int64_t total(const std::string& name) { return count_params(catalog_model(name)).total; }

TEST(ParamCount, Gpt2SmallMatchesHuggingFaceCount) {
  // 124,439,808: the parameter count of HF openai-community/gpt2 (tied LM head)
  EXPECT_EQ(total("gpt2-small"), 124439808);
}

TEST(ParamCount, Llama2_7bMatchesMetaCount) {
  // 6,738,415,616: HF meta-llama/Llama-2-7b-hf safetensors total
  EXPECT_EQ(total("llama2-7b"), 6738415616);
}

TEST(ParamCount, Gpt3_175bMatchesNarayananTable) {
  // 174.6B with vocab 51,200 (Narayanan et al. 2021, Table 2; their formula
  // 12lh^2(1 + 13/12h + (V+s)/12lh) omits the final LayerNorm's 2h)
  const std::int64_t p = total("gpt3-175b");
  EXPECT_NEAR(static_cast<double>(p) / 1e9, 174.6, 0.05);
  const std::int64_t l = 96, h = 12288, V = 51200, s = 2048;
  EXPECT_EQ(p, 12 * l * h * h + 13 * l * h + (V + s) * h + 2 * h);
}

TEST(ParamCount, MegatronTableSizes) {
  // Narayanan et al. 2021, Table 1: model sizes in billions
  const std::pair<const char*, double> rows[] = {
      {"megatron-gpt-1.7b", 1.7},     {"megatron-gpt-3.6b", 3.6},     {"megatron-gpt-7.5b", 7.5},
      {"megatron-gpt-18.4b", 18.4},   {"megatron-gpt-39.1b", 39.1},   {"megatron-gpt-76.1b", 76.1},
      {"megatron-gpt-145.6b", 145.6}, {"megatron-gpt-310.1b", 310.1}, {"megatron-gpt-529.6b", 529.6},
      {"megatron-gpt-1t", 1008.0}};
  // the table rounds to one decimal (3,562,168,320 prints as 3.6), hence 0.05B or 0.5%
  for (const auto& [name, billions] : rows)
    EXPECT_NEAR(total(name) / 1e9, billions, std::max(0.05, billions * 0.005)) << name;
}

TEST(ParamCount, LlamaFamiliesWithinPublishedRounding) {
  // Model cards: Llama 2 13B 13.0B, 70B 69.0B; Llama 3 8B 8.03B, 70B 70.6B, 405B 405.9B
  EXPECT_NEAR(total("llama2-13b") / 1e9, 13.016, 0.01);
  EXPECT_NEAR(total("llama2-70b") / 1e9, 68.98, 0.01);
  EXPECT_NEAR(total("llama3-8b") / 1e9, 8.03, 0.01);
  EXPECT_NEAR(total("llama3-70b") / 1e9, 70.55, 0.02);
  EXPECT_NEAR(total("llama3-405b") / 1e9, 405.85, 0.1);
  // Llama 3.2 1B (HF model page 1.24B), tied head, by hand: embedding 128256 x 2048 =
  // 262,668,288; a layer 2048 x (2048 + 2 x 512 + 2048) attention + 3 x 2048 x 8192 MLP +
  // 2 x 2048 norms = 60,821,504, x 16 = 973,144,064; the final norm 2048
  EXPECT_EQ(total("llama3.2-1b"), 262'668'288 + 973'144'064 + 2048);
}

TEST(ParamCount, Gemma2_27bMatchesGemmaTeamTable2) {
  // Gemma 2 paper (arXiv 2408.00118) Table 2, exact: 1,180,237,824 embedding (tied, so the
  // head adds none) + 26,047,480,320 non-embedding. By hand, a layer: q 4608 x 4096, k and v
  // 4608 x 2048 each, o 4096 x 4608 (56,623,104), GeGLU 3 x 4608 x 36864 (509,607,936), four
  // norms 4 x 4608: 566,249,472, x 46 = 26,047,475,712, plus the final norm 4608
  EXPECT_EQ(total("gemma2-27b"), 1180237824 + 26047480320);
}

TEST(ParamCount, MixtralActiveIsSmallerThanTotal) {
  // Jiang et al. 2024 (Mixtral of Experts), §1: 46.7B total, 12.9B active per token
  const ParamCount c = count_params(catalog_model("mixtral-8x7b"));
  EXPECT_NEAR(c.total / 1e9, 46.7, 0.05);
  EXPECT_NEAR(c.active / 1e9, 12.9, 0.05);
}

TEST(ParamCount, DeepSeekMoeSharedExpertsAndDenseLayer) {
  // Dai et al. 2024 (DeepSeekMoE), Table: 16.4B total, 2.8B activated
  const ModelSpec m = catalog_model("deepseek-moe-16b");
  ASSERT_TRUE(m.moe.has_value());
  EXPECT_GT(m.moe->shared_experts, 0);
  EXPECT_GT(m.moe->dense_layers, 0);
  const ParamCount c = count_params(m);
  EXPECT_NEAR(c.total / 1e9, 16.4, 0.1);
  EXPECT_NEAR(c.active / 1e9, 2.8, 0.1);
  // the first layer is dense: it has no router
  EXPECT_EQ(layer_params(m, 0).router, 0);
  EXPECT_GT(layer_params(m, 1).router, 0);
}

TEST(ParamCount, TinyMoeByHand) {
  const ModelSpec m = catalog_model("tiny-moe");
  // embedding and output 2 x 512 x 256, final norm 256; attention per layer: Q and O
  // 256 x 256, K and V 256 x 128 (4 of 8 heads), two norms 2 x 256
  const std::int64_t attention = 2 * 256 * 256 + 2 * 256 * 128 + 2 * 256;
  const std::int64_t dense_layer = attention + 3 * 256 * 688;  // SwiGLU
  const std::int64_t expert = 3 * 256 * 128;
  const std::int64_t moe_layer = attention + 8 * 256 + 8 * expert + expert;  // router, 8 routed, 1 shared
  const ParamCount c = count_params(m);
  EXPECT_EQ(c.total, 2 * 512 * 256 + 256 + dense_layer + 3 * moe_layer);
  EXPECT_EQ(c.total, 4'239'616);
  EXPECT_EQ(c.active, c.total - 3 * (8 - 2) * expert);  // 2 of 8 routed experts per token
}

TEST(ParamCount, TinyMlaByHand) {
  const ModelSpec m = catalog_model("tiny-mla");
  // MLA per layer: W_DQ 256 x 96, its norm 96, W_UQ 96 x 8 heads x (32 + 16), W_DKV 256 x
  // (64 + 16), its norm 64, W_UKV 64 x 8 x (32 + 32), W_O 8 x 32 x 256; two norms 2 x 256
  const std::int64_t attention =
      256 * 96 + 96 + 96 * 8 * 48 + 256 * 80 + 64 + 64 * 8 * 64 + 8 * 32 * 256 + 2 * 256;
  const std::int64_t expert = 3 * 256 * 128;
  const ParamCount c = count_params(m);
  EXPECT_EQ(c.total, 2 * 512 * 256 + 256 + (attention + 3 * 256 * 688) + 3 * (attention + 8 * 256 + 9 * expert));
  EXPECT_EQ(c.total, 4'174'720);
}

// The gradients summed over TP at the step's end (Megatron-core finalize_model_grads
// _allreduce_layernorm_grads), counted by hand.
TEST(TpSummedGradParams, Gpt2SmallUnderSequenceParallelism) {
  const ModelSpec m = catalog_model("gpt2-small");  // hidden 768, 12 layers, LayerNorm with biases, 1024 positions
  // a layer: two LayerNorms 2 x (768 + 768), the attention's output bias 768, fc2's bias 768
  const std::int64_t layer = 2 * 1536 + 768 + 768;
  EXPECT_EQ(layer, 4608);
  // one stage holding everything: the layers, the learned positions 1024 x 768, the final LayerNorm
  EXPECT_EQ(tp_summed_grad_params(m, true, {12, 0, true, true}), 12 * layer + 1024 * 768 + 1536);
  EXPECT_EQ(tp_summed_grad_params(m, true, {3, 0, false, false}), 3 * layer);  // a middle stage: layers only
  EXPECT_EQ(tp_summed_grad_params(m, false, {12, 0, true, true}), 0);           // without SP: nothing
}

TEST(TpSummedGradParams, TinyMoeCountsTheRouter) {
  const ModelSpec m = catalog_model("tiny-moe");  // RMSNorm over 256, no biases, 8 experts, no router bias
  const std::int64_t dense_layer = 2 * 256, moe_layer = 2 * 256 + 8 * 256;  // norms (+ the router's 8 x 256)
  EXPECT_EQ(tp_summed_grad_params(m, true, {1, 3, true, true}), dense_layer + 3 * moe_layer + 256);
}

TEST(TpSummedGradParams, TinyMlaCountsTheDuplicatedDownProjections) {
  const ModelSpec m = catalog_model("tiny-mla");
  // two norms 2 x 256, W_DQ 256 x 96 and its norm 96, W_DKV | W_KR 256 x (64 + 16) and its norm 64
  const std::int64_t attention = 2 * 256 + 256 * 96 + 96 + 256 * 80 + 64;
  EXPECT_EQ(tp_summed_grad_params(m, true, {1, 1, false, false}), attention + (attention + 8 * 256));
}

TEST(TpSummedGradParams, QkNormsAreSummedWithOrWithoutSequenceParallelism) {
  ModelSpec m = catalog_model("llama3-8b");  // head_dim 128, RMSNorm over 4096
  m.qk_norm = true;                          // as Qwen3: one scale over head_dim for Q, one for K
  EXPECT_EQ(tp_summed_grad_params(m, false, {4, 0, false, false}), 4 * 2 * 128);
  EXPECT_EQ(tp_summed_grad_params(m, true, {4, 0, false, false}), 4 * (2 * 128 + 2 * 4096));
}

TEST(ParamCount, EveryCatalogModelLoads) {
  for (const std::string& name : catalog_model_names()) {
    const ParamCount c = count_params(catalog_model(name));
    EXPECT_GT(c.total, 0) << name;
    EXPECT_LE(c.active, c.total) << name;
  }
}

}  // namespace
}  // namespace twinsim
