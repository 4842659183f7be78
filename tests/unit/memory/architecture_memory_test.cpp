// Weights per GPU, KV cache and serving attention counts of MLA and sliding-window models,
// derived by hand in the comments.
#include <gtest/gtest.h>

#include "models/param_count.hpp"
#include "sim/inference/iteration_ops.hpp"
#include "sim/memory/inference.hpp"
#include "sim/memory/weights.hpp"
#include "test_models.hpp"

namespace twinsim {
namespace {

using test::tiny_mla;

TEST(ArchitectureMemory, MlaWeightsOnOneGpuUnderTp) {
  Plan plan;
  // one GPU holds what the parameter count counts
  EXPECT_EQ(stage_params(tiny_mla(), plan, 0).total(), count_params(tiny_mla()).total);
  plan.tp = 2;
  // down-projections and their norms duplicated: 1024 + 16 + 768 + 8; up-projections and
  // W_O over 2 heads: 16x24 + 8x28 + 12x64 = 384 + 224 + 768; norms 128; FFN 3x64x64
  EXPECT_EQ(layer_params_on_gpu(tiny_mla(), plan, false).total(), 1024 + 16 + 768 + 8 + 384 + 224 + 768 + 128 + 12288);
}

TEST(ArchitectureMemory, MlaCachesTheLatentOnEveryTpRank) {
  // (latent 8 + RoPE key 4) x 2 layers x 2 B = 48 B, whatever the TP degree
  EXPECT_EQ(kv_cache_bytes_per_token(tiny_mla(), 2, 1, Dtype::bf16), 48);
  EXPECT_EQ(kv_cache_bytes_per_token(tiny_mla(), 2, 4, Dtype::bf16), 48);
}

TEST(ArchitectureMemory, WindowedLayersKeepTheWindowOnly) {
  ModelSpec m = tiny_mla();
  m.mla.reset();
  m.layers = 4, m.kv_heads = 2, m.head_dim = 16, m.sliding_window = 8, m.global_every = 2;
  Plan plan;
  InferenceWorkload w;
  w.batch = 2, w.prompt_len = 10, w.output_len = 6, w.kv_dtype = Dtype::bf16;
  // per token and layer 2 x 2 heads x 16 x 2 B = 128 B; layers 0, 2 keep 8 tokens, 1, 3 keep 16
  EXPECT_EQ(inference_kv_cache_bytes(m, plan, w, 0), 128 * 2 * (8 + 16 + 8 + 16));
}

TEST(ArchitectureMemory, ServingShapesCountTheWindow) {
  // decode after 19 cached tokens, window 8: 8 keys read; 20-wide row scaled by 8/20
  const IterationShape d = decode_shape(1, 20, 8);
  EXPECT_EQ(d.kv_read_tokens, 20);
  EXPECT_EQ(d.window_kv_read_tokens, 8);
  EXPECT_DOUBLE_EQ(d.window_pairs, 8.0);
  // prefill of 16: rectangle 256 x (window pairs 36 + 64 = 100) / (causal 136)
  const IterationShape p = prefill_shape(3, 16, 8);
  EXPECT_DOUBLE_EQ(p.attention_pairs, 3 * 256.0);
  EXPECT_NEAR(p.window_pairs, 3 * 256.0 * 100 / 136, 1e-9);
  EXPECT_EQ(p.window_kv_read_tokens, 3 * 16);
}

TEST(ArchitectureMemory, MultiTokenPredictionWeightsOnTheLastStage) {
  ModelSpec m = tiny_mla();
  m.moe = MoeSpec{};
  m.moe->experts = 4, m.moe->top_k = 2, m.moe->expert_ffn_hidden = 32;
  Plan plan;
  const std::int64_t without = stage_params(m, plan, 0).total();
  m.mtp_layers = 1;
  // the memory layout's module (per GPU) against param_count's, two code paths
  EXPECT_EQ(stage_params(m, plan, 0).total() - without, mtp_module_params(m));
  // by hand: 3 norms 3 x 64, projection 2 x 64 x 64, and the MoE block: attention 4568,
  // norms 128, router 64 x 4, experts 4 x 3 x 64 x 32
  EXPECT_EQ(count_params(m).mtp, 192 + 8192 + 4568 + 128 + 256 + 24576);
}

}  // namespace
}  // namespace twinsim
