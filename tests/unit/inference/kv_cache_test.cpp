// KV cache arithmetic: bytes per token from the architecture, paged blocks, capacity.
#include <gtest/gtest.h>

#include "scenario/load.hpp"

#include "serving_scenarios.hpp"
#include "sim/inference/batch_prediction.hpp"
#include "sim/inference/kv_cache.hpp"
#include "sim/memory/inference.hpp"

namespace twinsim {
namespace {

// Kwon et al. 2023 (vLLM), §3: "the KV cache of a single token demands 800 KB of space,
// calculated as 2 (key and value vectors) x 5120 (hidden state size) x 40 (number of
// layers) x 2 (bytes per FP16)" for OPT-13B; Llama-2-13B has the same shape.
TEST(KvCache, Llama2_13bFp16Is819200BytesPerToken) {
  const Scenario s = test::serving_scenario("llama2-13b", "dgx-a100-80gb", 1, 1, 1, 1, 128, 128);
  EXPECT_EQ(predict_inference(s).kv_cache_bytes_per_token, 819200);
}

// Llama-2-70B (HF config: 80 layers, 8 KV heads of 128): 2 x 80 x 8 x 128 x 2 B = 327,680 B,
// a quarter of multi-head attention's 1,310,720 (GQA, Ainslie et al. 2023).
TEST(KvCache, GroupedQueryAttentionCountsKvHeadsOnly) {
  const Scenario s = test::serving_scenario("llama2-70b", "dgx-a100-80gb", 8, 8, 1, 1, 128, 128);
  const InferencePrediction p = predict_inference(s);
  EXPECT_EQ(p.kv_cache_bytes_per_token, 327680);
  // TP 8 over 8 KV heads: one head per GPU, 80 x 2 x 128 x 2 B
  EXPECT_EQ(p.kv_cache_bytes_per_token_per_gpu, 40960);
}

TEST(KvCache, QuantizedCacheShrinksWithTheDtype) {
  const Scenario fp8 = test::serving_scenario("llama2-13b", "dgx-h100", 1, 1, 1, 1, 128, 128, "fp16", "fp8");
  EXPECT_EQ(predict_inference(fp8).kv_cache_bytes_per_token, 409600);
  const Scenario int4 = test::serving_scenario("llama2-13b", "dgx-h100", 1, 1, 1, 1, 128, 128, "fp16", "int4");
  EXPECT_EQ(predict_inference(int4).kv_cache_bytes_per_token, 204800);
}

// vLLM §4.2: a sequence holds ceil(n / B) blocks; only the last one is partly empty.
TEST(KvCache, PagedBlocksRoundUpToTheLastBlock) {
  EXPECT_EQ(blocks_for_tokens(1, 16), 1);
  EXPECT_EQ(blocks_for_tokens(16, 16), 1);
  EXPECT_EQ(blocks_for_tokens(17, 16), 2);
  EXPECT_EQ(unused_slots(17, 16), 15);
  EXPECT_EQ(unused_slots(32, 16), 0);
  KvCapacity cap;
  cap.block_tokens = 16;
  cap.blocks = 1000;
  const ModelSpec dense = catalog_model("llama2-7b");
  EXPECT_EQ(max_batch(cap, 257, dense, StackSpec{}), 1000 / 17);  // 257 tokens: 17 blocks, 15 slots wasted
  EXPECT_EQ(max_batch(cap, 256, dense, StackSpec{}), 1000 / 16);
  // gpt-oss: 18 of 36 layers keep a 128-token window: a 4096-token sequence holds
  // (0.5 x 4096 + 0.5 x 128) / 16 = 132 blocks, not 256
  const ModelSpec oss = catalog_model("gpt-oss-120b");
  EXPECT_EQ(max_batch(cap, 4096, oss, StackSpec{}), 1000 / 132);
  EXPECT_EQ(max_batch(cap, 4096, dense, StackSpec{}), 1000 / 256);
}

// What each engine does with a windowed layer's K,V out of the window
// (hardware/catalog/stacks/*.yaml, serving_window_kv): vLLM V1's hybrid allocator, SGLang's
// SWA pool and TensorRT-LLM's cyclic KV free it, vLLM V0's one block table keeps it. gpt-oss
// (18 of 36 layers windowed to 128 tokens) at 4096 tokens: 132 blocks freed, 256 kept.
TEST(KvCache, WindowedKvFollowsTheEngine) {
  KvCapacity cap;
  cap.block_tokens = 16;
  cap.blocks = 100000;
  const ModelSpec oss = catalog_model("gpt-oss-120b");
  for (const char* engine : {"vllm-v1", "sglang", "trtllm-v1", "trtllm"})
    EXPECT_EQ(max_batch(cap, 4096, oss, catalog_stack(engine)), 100000 / 132) << engine;
  EXPECT_EQ(max_batch(cap, 4096, oss, catalog_stack("vllm-v0")), 100000 / 256);
}

// The same through `simulate`: Gemma 2 27B (every other layer windowed to 4,096 tokens) at
// 4K + 4K tokens on one H200. Under vLLM V0 a sequence holds all 8,192 tokens in every layer,
// under V1 3/4 of them (half the layers keep 4,096): about 4/3 the sequences fit, and the
// memory report's KV cache of the batch is 3/4 (up to the windowed share's rounding).
TEST(KvCache, WindowedModelsBatchFollowsTheEngine) {
  Scenario v1 = test::serving_scenario("gemma2-27b", "dgx-h200", 1, 1, 1, 8, 4096, 4096);
  Scenario v0 = v1;
  v1.stack = catalog_stack("vllm-v1");
  v0.stack = catalog_stack("vllm-v0");
  const InferencePrediction kept = predict_inference(v0), freed = predict_inference(v1);
  ASSERT_GT(kept.max_batch, 0);
  EXPECT_NEAR(static_cast<double>(freed.max_batch) / static_cast<double>(kept.max_batch), 4.0 / 3.0, 0.03);
  const std::int64_t kept_bytes = inference_kv_cache_bytes(v0.model, v0.plan, *v0.inference, 0, true);
  const std::int64_t freed_bytes = inference_kv_cache_bytes(v1.model, v1.plan, *v1.inference, 0, false);
  EXPECT_NEAR(static_cast<double>(freed_bytes) / static_cast<double>(kept_bytes), 0.75, 0.01);
}

// Llama-2-7B fp16 on one A100-80GB, worked by hand: 0.9 x 80 GiB = 77,309,411,328 B usable;
// weights 6,738,415,616 params x 2 B = 13,476,831,232 B; a block is 16 tokens x 524,288 B
// (2 x 32 layers x 4096 x 2 B) = 8,388,608 B. Without workspace and activations that is
// 7,609 blocks; the reserve of a 2048-token pass (< 0.25 GB) may take up to ~30 of them.
TEST(KvCache, CapacityIsWhatTheWeightsLeave) {
  const Scenario s = test::serving_scenario("llama2-7b", "dgx-a100-80gb", 1, 1, 1, 1, 128, 128);
  const KvCapacity cap = kv_capacity(s);
  ASSERT_EQ(cap.stages.size(), 1u);
  EXPECT_EQ(cap.stages[0].usable_bytes, 77309411328);
  EXPECT_EQ(cap.stages[0].weight_bytes, 13476831232);
  EXPECT_EQ(cap.stages[0].bytes_per_token, 524288);
  EXPECT_LE(cap.blocks, 7609);
  EXPECT_GE(cap.blocks, 7609 - 30);
  // 256 tokens per sequence: 16 blocks each
  EXPECT_EQ(predict_inference(s).max_batch, cap.blocks / 16);
}

// SGLang sizes its pool as mem_fraction_static of the GPU less the weights, nothing set aside
// for a profiled pass (ModelRunner.profile_max_num_token; hardware/catalog/stacks/sglang.yaml).
// The same Llama-2-7B by hand at TP 1's 0.88: 0.88 x 85,899,345,920 B = 75,591,424,409 B (cut
// to whole bytes), less the 13,476,831,232 B of weights = 62,114,593,177 B, / 8,388,608 B a
// block = 7,404 blocks (7,404.6) exactly, where vLLM's 0.9 less its reserve gives 7,579-7,609.
TEST(KvCache, SglangPoolIsItsStaticFractionLessTheWeights) {
  Scenario s = test::serving_scenario("llama2-7b", "dgx-a100-80gb", 1, 1, 1, 1, 128, 128);
  s.stack = catalog_stack("sglang");
  const KvCapacity cap = kv_capacity(s, engine_kv_config(s));
  ASSERT_EQ(cap.stages.size(), 1u);
  EXPECT_EQ(cap.stages[0].usable_bytes, 75591424409);
  EXPECT_EQ(cap.stages[0].activation_bytes, 0);
  EXPECT_EQ(cap.stages[0].buffer_bytes, 0);
  EXPECT_EQ(cap.blocks, 7404);
  EXPECT_EQ(predict_inference(s).kv.blocks, 7404);  // `simulate` sizes it the same way
  // the default fraction by TP size (server_args.py): 0.88, 0.87 from 2, 0.85 from 4, 0.81 from 8
  const StackSpec sglang = catalog_stack("sglang");
  EXPECT_DOUBLE_EQ(sglang.serving_static_fraction(1), 0.88);
  EXPECT_DOUBLE_EQ(sglang.serving_static_fraction(2), 0.87);
  EXPECT_DOUBLE_EQ(sglang.serving_static_fraction(3), 0.87);
  EXPECT_DOUBLE_EQ(sglang.serving_static_fraction(4), 0.85);
  EXPECT_DOUBLE_EQ(sglang.serving_static_fraction(8), 0.81);
  EXPECT_DOUBLE_EQ(sglang.serving_static_fraction(16), 0.79);
  // vLLM's engines keep the profiled sizing
  Scenario v1 = s;
  v1.stack = catalog_stack("vllm-v1");
  EXPECT_EQ(engine_kv_config(v1).static_fraction, 0);
  EXPECT_GE(kv_capacity(v1, engine_kv_config(v1)).blocks, 7609 - 30);
}

// The stage with the least room decides: with PP the last stage also holds the logits
// layer (32000 x 4096 x 2 B), and the first the embedding table of the same size.
TEST(KvCache, PipelineStagesEachHoldTheirLayersCache) {
  const Scenario s = test::serving_scenario("llama2-7b", "dgx-a100-80gb", 2, 1, 2, 1, 128, 128);
  const KvCapacity cap = kv_capacity(s);
  ASSERT_EQ(cap.stages.size(), 2u);
  EXPECT_EQ(cap.stages[0].bytes_per_token, 262144);  // 16 layers
  EXPECT_EQ(cap.stages[1].bytes_per_token, 262144);
  EXPECT_GT(cap.blocks, 2 * 7500);  // half the layers per GPU: about twice the blocks
}

TEST(KvCache, AModelThatDoesNotFitLeavesNoBlocks) {
  const Scenario s = test::serving_scenario("llama2-70b", "dgx-a100-80gb", 1, 1, 1, 1, 128, 128);
  EXPECT_EQ(kv_capacity(s).blocks, 0);
  EXPECT_EQ(predict_inference(s).max_batch, 0);
}

}  // namespace
}  // namespace twinsim
