// TensorRT-LLM 1.0's KV pool (sim/inference/trtllm_kv_pool.hpp), by hand.
#include <gtest/gtest.h>

#include "scenario/errors.hpp"
#include "scenario/load.hpp"
#include "sim/inference/kv_cache.hpp"
#include "sim/inference/serve_run.hpp"
#include "sim/inference/trtllm_kv_pool.hpp"

namespace twinsim {
namespace {

// Qwen3-235B-A22B FP8 as TensorRT-LLM's perf page runs it on 8 GPUs: attention DP 8, experts EP 8.
Scenario qwen3_235b(const std::string& node, std::int64_t prompt, std::int64_t output) {
  return load_scenario_text("model: qwen3-235b-a22b\ncluster: {preset: " + node +
                            ", gpus_per_node: 8, nodes: 1}\ninference: {prompt_len: " + std::to_string(prompt) +
                            ", output_len: " + std::to_string(output) +
                            ", batch: 3000, weight_dtype: fp8, kv_dtype: fp8}\n"
                            "stack: {preset: trtllm-v1, serving_kv_free_fraction: 0.9}\n"
                            "plan: {tp: 1, pp: 1, dp: 8, ep: 8}\n");
}

KvCacheConfig trtllm_config(std::int64_t graph_sequences) {
  KvCacheConfig c;
  c.max_batched_tokens = 8192;  // max_num_tokens, the LLM API's default
  c.free_fraction = 0.9;
  c.graph_sequences = graph_sequences;
  c.block_tokens = 32;  // tokens_per_block, trtllm-v1's serving_kv_block_tokens
  return c;
}

// moe_kernels.cu getWorkspaceDeviceBufferSizes with M = top_k x rows.
TEST(TrtllmKvPool, CutlassMoeWorkspaceByHand) {
  // Qwen3-235B, FP8 (act 1 B), 8 ranks' 8,192 tokens gathered: M = 8 x 65,536 = 524,288;
  // inputs M x max(4096 x 1, 4096 x 2, 1536 x 1) = 8192 M; outputs M x max(1536, 2 x 1536 x 2,
  // 4096 x 2) = 8192 M; + 20 M: 16,404 x 524,288 = 8,600,420,352 B
  EXPECT_EQ(cutlass_moe_workspace_bytes(65536, 4096, 1536, 8, 1.0), 8'600'420'352);
  // Qwen3-30B-A3B, NVFP4 (0.5 B), 8,192 tokens: M = 65,536; inputs M x max(1024, 4096, 384);
  // outputs M x max(384, 3072, 4096); + 20 M: 8,212 x 65,536 = 538,181,632 B
  EXPECT_EQ(cutlass_moe_workspace_bytes(8192, 2048, 768, 8, 0.5), 538'181'632);
}

// The pool of one H200 of the 8, prompts 1000 / outputs 1000, 2,048 sequences at most.
TEST(TrtllmKvPool, Qwen3_235bOnAnH200ByHand) {
  const Scenario s = qwen3_235b("dgx-h200", 1000, 1000);
  const StageKvCapacity st = trtllm_stage_kv(s, trtllm_config(2048), 0);
  // total: 140.4 GiB = 150,753,352,089 B
  EXPECT_EQ(st.usable_bytes, 150'753'352'089);
  // dummy pass, 8,192 tokens a rank; its MoE layer: 3 bf16 streams 3 x 8192 x 4096 x 2 =
  // 201,326,592; the 65,536 gathered rows' fp8 input, bf16 output and routing 65,536 x (4096 x 3
  // + 8 x 8) = 809,500,672; workspace 8,600,420,352 (above): 9,611,247,616 B (the model's own
  // prefill pass of 8,192 tokens is ~2 GB)
  EXPECT_EQ(st.activation_bytes, 9'611'247'616);
  // graphs: the estimation cache holds the dummy prompts of min(8192, 1999) tokens: 4 of 1,999 +
  // one of 196, (4 x ceil(2001 / 32) + ceil(198 / 32)) x 8 ranks = (252 + 7) x 8 = 2,072 blocks,
  // so the 2,048 graph is captured; its MoE layer at 2,048 tokens: 3 x 2048 x 4096 x 2 =
  // 50,331,648 + 16,384 x 12,352 = 202,375,168 + 131,072 x 16,404 = 2,150,105,088: 2,402,811,904.
  // Outside torch besides: the CUDA context 300 MiB = 314,572,800, cuBLAS 32 MiB + NCCL 64 MiB for
  // each of the dp and ep groups = 167,772,160: 2,885,156,864 B
  EXPECT_EQ(st.buffer_bytes, 2'885'156'864);
  // weights: attention and 16 of 128 experts a layer in fp8, 37,679,029,248 B (`simulate --json`)
  EXPECT_EQ(st.weight_bytes, 37'679'029'248);
  // 0.9 x (150,753,352,089 - 37,679,029,248 - 2,885,156,864 - 9,611,247,616) = 0.9 x
  // 100,577,918,361 = 90,520,126,524 B
  EXPECT_EQ(st.kv_bytes, 90'520'126'524);
  // 96,256 B a token (2 x 94 layers x 4 heads x 128 x 1 B), 32-token blocks of 3,080,192 B:
  // 29,387 blocks (90,520,126,524 / 3,080,192 = 29,387.6)
  EXPECT_EQ(kv_capacity(s, engine_kv_config(s, trtllm_config(2048))).blocks, 29'387);
}

// The graphs' pool is the largest graph the estimation cache let warmup capture: a single GPU's
// dummy prompts take ~259 blocks, so a 2,048 limit captures up to 256 there, while attention DP's
// eight copies let the 2,048 graph in.
TEST(TrtllmKvPool, GraphsAreThoseTheEstimationCacheHolds) {
  const Scenario dense = load_scenario_text(
      "model: llama3-8b\ncluster: {preset: dgx-h100, gpus_per_node: 1, nodes: 1}\ninference: {prompt_len: 1000, "
      "output_len: 1000, batch: 100, weight_dtype: fp8, kv_dtype: fp8}\n"
      "stack: {preset: trtllm-v1, serving_kv_free_fraction: 0.9}\nplan: {tp: 1, pp: 1}\n");
  EXPECT_EQ(trtllm_stage_kv(dense, trtllm_config(2048), 0).buffer_bytes,
            trtllm_stage_kv(dense, trtllm_config(256), 0).buffer_bytes);
  EXPECT_GT(trtllm_stage_kv(dense, trtllm_config(256), 0).buffer_bytes,
            trtllm_stage_kv(dense, trtllm_config(128), 0).buffer_bytes);
  const Scenario moe = qwen3_235b("dgx-h200", 1000, 1000);
  EXPECT_GT(trtllm_stage_kv(moe, trtllm_config(2048), 0).buffer_bytes,
            trtllm_stage_kv(moe, trtllm_config(256), 0).buffer_bytes);
}

// The stack key turns the sizing on (trtllm-v1 sets the engine's 0.9, stacks/trtllm-v1.yaml);
// vLLM's profiled sizing stays where it is 0.
TEST(TrtllmKvPool, TheStackKeySelectsIt) {
  EXPECT_DOUBLE_EQ(catalog_stack("trtllm-v1").serving_kv_free_fraction, 0.9);
  EXPECT_DOUBLE_EQ(catalog_stack("vllm-v1").serving_kv_free_fraction, 0);
  const Scenario s = qwen3_235b("dgx-h100", 1000, 1000);
  EXPECT_DOUBLE_EQ(s.stack.serving_kv_free_fraction, 0.9);
  EXPECT_DOUBLE_EQ(engine_kv_config(s).free_fraction, 0.9);
  EXPECT_EQ(engine_kv_config(s).graph_sequences, 2048);  // trtllm-v1's serving_max_sequences
  Scenario vllm = s;
  vllm.stack.serving_kv_free_fraction = 0;
  KvCacheConfig c = engine_kv_config(vllm);
  c.max_batched_tokens = 8192;
  const StageKvCapacity profiled = kv_capacity(vllm, c).stages[0];
  EXPECT_EQ(profiled.usable_bytes, static_cast<std::int64_t>(0.9 * static_cast<double>(s.cluster.gpu.memory_bytes)));
  EXPECT_LT(trtllm_stage_kv(s, trtllm_config(2048), 0).kv_bytes, profiled.kv_bytes);
  EXPECT_THROW(load_scenario_text("model: llama2-7b\ncluster: {preset: dgx-h100, gpus_per_node: 1, nodes: 1}\n"
                                  "stack: {preset: sglang, serving_kv_free_fraction: 0.9}\n"
                                  "inference: {prompt_len: 128, output_len: 128, batch: 8}\nplan: {}\n"),
               ScenarioError);
}

// TensorRT-LLM's 32-token blocks (stacks/trtllm-v1.yaml serving_kv_block_tokens): a sequence of
// prompt 1000 + output 1000 = 2,000 tokens holds ceil(2000 / 32) = 63 of them in serve, unless
// --block-size names another size; stacks without the key keep vLLM's 16.
TEST(TrtllmKvPool, TheStackGivesItsBlockSize) {
  EXPECT_EQ(catalog_stack("trtllm-v1").serving_kv_block_tokens, 32);
  EXPECT_EQ(engine_block_tokens(catalog_stack("trtllm-v1")), 32);
  EXPECT_EQ(engine_block_tokens(catalog_stack("vllm-v1")), 16);
  const Scenario s = qwen3_235b("dgx-h200", 1000, 1000);
  ServeRequest request;
  request.requests = 4;
  request.rate_per_s = 1;
  const ServeRun engines = run_serve(s, request);
  EXPECT_EQ(engines.result.block_tokens, 32);
  request.block_tokens_given = true;  // --block-size 16
  request.options.kv.block_tokens = 16;
  const ServeRun named = run_serve(s, request);
  EXPECT_EQ(named.result.block_tokens, 16);
  // one rank's pool (Qwen3_235bOnAnH200ByHand), 90,520,126,524 B: 29,387 blocks of 32 x 96,256 B,
  // 58,775 of 16 x 96,256 B (the estimation cache still holds the 2,048 graph at 16)
  EXPECT_EQ(engines.result.total_blocks, 29'387);
  EXPECT_EQ(named.result.total_blocks, 58'775);
  EXPECT_THROW(load_scenario_text("model: llama2-7b\ncluster: {preset: dgx-h100, gpus_per_node: 1, nodes: 1}\n"
                                  "stack: {preset: trtllm-v1, serving_kv_block_tokens: -32}\n"
                                  "inference: {prompt_len: 128, output_len: 128, batch: 8}\nplan: {}\n"),
               ScenarioError);
}

}  // namespace
}  // namespace twinsim
