// KV cache and serving memory against the vLLM paper's per-token figures.
#include <gtest/gtest.h>

#include "sim/memory/inference.hpp"
#include "tests/unit/memory/test_models.hpp"

namespace twinsim {
namespace {

// Kwon et al. 2023 (vLLM) §3: 2 x 5120 x 40 x 2 B = 800 KB (819,200 B) per token for a
// 13B model; the same formula gives Llama-2-7B 2 x 4096 x 32 x 2 = 524,288 B.
TEST(KvCache, BytesPerTokenOfVllm) {
  EXPECT_EQ(kv_cache_bytes_per_token(test::llama2_7b(), 32, 1, Dtype::fp16), 524'288);
  EXPECT_EQ(kv_cache_bytes_per_token(test::llama2_13b(), 40, 1, Dtype::fp16), 819'200);
}

TEST(KvCache, TensorParallelShardsHeadsButKeepsOnePerGpu) {
  EXPECT_EQ(kv_cache_bytes_per_token(test::llama2_7b(), 32, 4, Dtype::fp16), 524'288 / 4);
  // Llama 3 70B: 8 KV heads; at tp 16 each GPU still holds one (replicated)
  EXPECT_EQ(kv_cache_bytes_per_token(test::llama3_70b(), 80, 8, Dtype::bf16), 2 * 80 * 1 * 128 * 2);
  EXPECT_EQ(kv_cache_bytes_per_token(test::llama3_70b(), 80, 16, Dtype::bf16), 2 * 80 * 1 * 128 * 2);
  EXPECT_EQ(kv_cache_bytes_per_token(test::llama3_70b(), 80, 1, Dtype::fp8), 2 * 80 * 8 * 128);
}

TEST(KvCache, WholeBatchOnAStage) {
  Plan p;
  p.pp = 2;
  InferenceWorkload w;
  w.batch = 8, w.prompt_len = 1000, w.output_len = 24, w.kv_dtype = Dtype::fp16;
  EXPECT_EQ(inference_kv_cache_bytes(test::llama2_7b(), p, w, 1), 524'288LL / 2 * 8 * 1024);
}

// Flash attention's prefill working set has no batch x heads x s^2 term.
TEST(Prefill, FlashAvoidsTheScoreMatrix) {
  Plan p;
  InferenceWorkload w;
  w.batch = 4, w.prompt_len = 4096;
  const std::int64_t flash = prefill_activation_bytes(test::llama2_7b(), p, w, 0);
  p.flash_attention = false;
  const std::int64_t plain = prefill_activation_bytes(test::llama2_7b(), p, w, 0);
  EXPECT_GT(plain, 4LL * 32 * 4096 * 4096 * 2);  // at least the scores, once
  EXPECT_LT(flash, plain / 10);
}

// The prefill peak of an eager no-grad forward: three [s, b, h] (the layer's input, the
// residual, the norm output) next to SwiGLU's gate and up projections and their product
// (Llama 2 7B, bf16, one prompt of 4096 tokens; the head's logits come after the layers).
TEST(Prefill, ThreeStreamsNextToTheActivation) {
  const ModelSpec m = test::llama2_7b();
  InferenceWorkload w;
  w.batch = 1, w.prompt_len = 4096;
  const std::int64_t s = 4096, stream = 2 * s * m.hidden, ffn = 2 * s * m.ffn_hidden;
  EXPECT_EQ(prefill_activation_bytes(m, Plan{}, w, 0), 3 * stream + 3 * ffn);
}

}  // namespace
}  // namespace twinsim
