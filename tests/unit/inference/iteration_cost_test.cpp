// Prefill and decode passes: what they compute and read, checked against hand arithmetic
// from the Llama 2 configs and against roofline bounds of the datasheets.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "scenario/load.hpp"
#include "serving_scenarios.hpp"
#include "sim/inference/batch_prediction.hpp"
#include "sim/inference/iteration_cost.hpp"
#include "sim/inference/quantization.hpp"

namespace twinsim {
namespace {

// Llama-2-7B linear-layer weights, from its config (h 4096, ffn 11008, 32 layers, vocab 32000):
// per layer QKV + O = 4 x 4096^2, gate/up/down = 3 x 4096 x 11008.
constexpr std::int64_t kLayerMatrixParams = 4LL * 4096 * 4096 + 3LL * 4096 * 11008;  // 202,375,168
constexpr std::int64_t kMatrixParams = 32 * kLayerMatrixParams;                      // 6,476,005,376
constexpr std::int64_t kLmHeadParams = 32000LL * 4096;                               // 131,072,000

TEST(Quantization, Int4CarriesOneFp16ScalePer128Weights) {
  EXPECT_EQ(weight_matrix_bytes(Dtype::int4, 4096 * 4096), 8388608 + 2 * 131072);
  EXPECT_EQ(weight_matrix_bytes(Dtype::int8, 4096 * 4096), 16777216);
  EXPECT_EQ(weight_matrix_bytes(Dtype::fp16, 4096 * 4096), 33554432);
  EXPECT_EQ(weight_matrix_bytes(Dtype::int4, 129), 65 + 4);  // two groups, one partial
}

TEST(Quantization, Fp8MathOnlyWhereTheGpuHasFp8TensorCores) {
  const Scenario a100 = test::serving_scenario("llama2-7b", "dgx-a100-80gb", 1, 1, 1, 1, 128, 128);
  const Scenario h100 = test::serving_scenario("llama2-7b", "dgx-h100", 1, 1, 1, 1, 128, 128);
  EXPECT_EQ(gemm_math_dtype(a100.cluster.gpu, Dtype::fp8), Dtype::fp16);
  EXPECT_EQ(gemm_math_dtype(h100.cluster.gpu, Dtype::fp8), Dtype::fp8);
  EXPECT_EQ(gemm_math_dtype(h100.cluster.gpu, Dtype::int4), Dtype::fp16);  // weight-only
}

TEST(DecodePass, ReadsEveryWeightOnce) {
  const Scenario s = test::serving_scenario("llama2-7b", "dgx-a100-80gb", 1, 1, 1, 1, 128, 128);
  const ServingCostModel model(s);
  EXPECT_DOUBLE_EQ(model.cost(decode_shape(1, 200)).weight_bytes, 2.0 * (kMatrixParams + kLmHeadParams));
  // the weights do not grow with the batch: that is why batching decode pays
  EXPECT_DOUBLE_EQ(model.cost(decode_shape(64, 200)).weight_bytes, 2.0 * (kMatrixParams + kLmHeadParams));
}

TEST(DecodePass, Int4WeightsReadAQuarterPlusScales) {
  const Scenario s = test::serving_scenario("llama2-7b", "dgx-a100-80gb", 1, 1, 1, 1, 128, 128, "int4");
  const ServingCostModel model(s);
  const double expected = kMatrixParams / 2.0 + 2.0 * (kMatrixParams / 128) + 2.0 * kLmHeadParams;
  EXPECT_DOUBLE_EQ(model.cost(decode_shape(1, 200)).weight_bytes, expected);
  const Scenario fp16 = test::serving_scenario("llama2-7b", "dgx-a100-80gb", 1, 1, 1, 1, 128, 128);
  EXPECT_LT(model.cost(decode_shape(1, 200)).latency_s(),
            0.4 * ServingCostModel(fp16).cost(decode_shape(1, 200)).latency_s());
}

TEST(DecodePass, TensorParallelSplitsTheWeightsAndAddsAllReduces) {
  const Scenario tp2 = test::serving_scenario("llama2-7b", "dgx-a100-80gb", 2, 2, 1, 1, 128, 128);
  const IterationCost c = ServingCostModel(tp2).cost(decode_shape(1, 200));
  EXPECT_DOUBLE_EQ(c.weight_bytes, (kMatrixParams + kLmHeadParams) * 1.0);  // half of 2 bytes each
  EXPECT_GT(c.tp_comm_s, 0);
}

// A pass whose weights and KV reads fit the device's cache streams its GEMMs at the
// "gemm_cached" rate; one that does not, at "gemm" (curves made up: 0.25 and 1 of HBM).
TEST(DecodePass, GemmsReadFromTheCacheOnlyWhenThePassFitsIt) {
  Scenario s = test::serving_scenario("llama2-7b", "dgx-a100-80gb", 1, 1, 1, 1, 128, 128);
  s.cluster.gpu.kernel_efficiency["gemm"] = {{{1, 0.25}}, {}};
  s.cluster.gpu.kernel_efficiency["gemm_cached"] = {{{1, 1.0}}, {}};
  const double weights = 2.0 * (kMatrixParams + kLmHeadParams);  // 13.2 GB of fp16
  auto decode_compute_s = [&](double cache_bytes) {
    s.cluster.gpu.cache_bytes = static_cast<std::int64_t>(cache_bytes);
    return ServingCostModel(s).cost(decode_shape(1, 200)).compute_s;
  };
  const double no_cache = decode_compute_s(0), too_small = decode_compute_s(0.9 * weights),
               fits = decode_compute_s(1.1 * weights);
  EXPECT_DOUBLE_EQ(too_small, no_cache);
  // the weights' read is most of a batch-1 decode: at 4x the rate it takes well under half
  EXPECT_LT(fits, 0.4 * no_cache);
  EXPECT_GT(fits, weights / 2039e9);  // still no faster than reading them at the full HBM rate
  // a device without a cached curve keeps its "gemm" rate even when the pass fits
  s.cluster.gpu.kernel_efficiency.erase("gemm_cached");
  EXPECT_DOUBLE_EQ(decode_compute_s(1.1 * weights), no_cache);
}

// The executor's TP-2 serving case (scenarios/validation/host/tiny-llama-inference-tp2.yaml):
// each rank re-reads its weights every decode step, 6,062,080 B of fp32 (per layer qkv
// 512 x 256, proj 256 x 256, gate_up 1,376 x 256, down 256 x 688 halved = 362,496 values, 4
// layers, and half the 512 x 256 logits), and 4 sequences' K and V after 64 tokens (4 x 64 x 2
// KV heads x 32 x 2 x 4 B = 131,072 B a layer). calibrate measures the working set a rank
// keeps warm (cache_MiB: 6.7-7.6 MiB on the 2-vCPU EPYC, loaded): 6 MiB holds the weights but
// not the KV reads, so the GEMMs stream cold; 8 MiB holds both, so they run at gemm_cached.
// (A file without the reuse curve: the binary pick, its working set as the curve's below.)
TEST(DecodePass, TheTinyLlamaTp2DecodeIsCachedWhenItsWeightsAndKvFit) {
  Scenario s = test::serving_scenario("tiny-llama", "dgx-a100-80gb", 2, 2, 1, 4, 64, 32, "fp32", "fp32");
  s.cluster.gpu.kernel_efficiency["gemm"] = {{{1, 0.01}}, {}};
  s.cluster.gpu.kernel_efficiency["gemm_cached"] = {{{1, 0.04}}, {}};
  auto decode = [&](double cache_MiB) {
    s.cluster.gpu.cache_bytes = static_cast<std::int64_t>(cache_MiB * 1048576);
    return ServingCostModel(s).cost(decode_shape(4, 64));
  };
  const IterationCost cold = decode(0);
  EXPECT_DOUBLE_EQ(cold.weight_bytes, 6062080.0);
  EXPECT_GT(6062080.0 + 4 * 131072.0, 6 * 1048576.0);
  EXPECT_DOUBLE_EQ(decode(6).compute_s, cold.compute_s);
  // the weights' stream at 4x the rate: at 1% and 4% of the A100's 2,039 GB/s it takes 297 and
  // 74 us; at least three quarters of that difference goes (the rest of the pass is the same)
  const double hbm = s.cluster.gpu.hbm_bandwidth_Bps;
  EXPECT_GT(cold.compute_s - decode(8).compute_s, 0.75 * 6062080.0 * (1 / (0.01 * hbm) - 1 / (0.04 * hbm)));
}

// The same decode priced on a reuse curve (GpuSpec::gemm_reuse_time) at its working set, by
// hand: 6,062,080 B of weights; the attention's reads and writes, per layer 4 sequences x 65
// tokens x 2 KV heads x 32 x K and V x 4 B = 133,120 B and Q and O, 2 x 4 x 4 heads x 32 x 4 B
// = 4,096 B, 4 layers: 548,864 B; and the GEMMs' rows, 4 tokens x (k + n) x 4 B: per layer
// qkv 256 -> 256 (8,192 B), proj 128 -> 256 (6,144), gate_up 256 -> 688 (15,104), down 344 ->
// 256 (9,600), 4 layers, and the logits 256 -> 256 (8,192): 164,352 B; 6,775,296 B in all. A
// curve of 0.25 at 4 MiB and 1 at 16 MiB is log-log linear with slope 1, so the factor is
// 6,775,296 / 16 MiB = 0.40384: the GEMMs (memory-bound at 1% of HBM) lose 1 - 0.40384 of
// their 6,226,432 B stream; nothing else in the pass moves. (The math side is
// kept far below: a flat 100% GEMM curve, no wave quantisation.)
TEST(DecodePass, TheTinyLlamaTp2DecodeGemmsAtTheReuseCurvesValueForItsWorkingSet) {
  Scenario s = test::serving_scenario("tiny-llama", "dgx-a100-80gb", 2, 2, 1, 4, 64, 32, "fp32", "fp32");
  s.cluster.gpu.kernel_efficiency["gemm"] = {{{1, 0.01}}, {}};
  s.cluster.gpu.gemm_efficiency = {{1, 1.0}};
  s.cluster.gpu.gemm_efficiency_by_dtype.clear();
  s.cluster.gpu.sms = 0;
  const IterationCost cold = ServingCostModel(s).cost(decode_shape(4, 64));
  s.cluster.gpu.gemm_reuse_time = {{4 * 1048576.0, 0.25}, {16 * 1048576.0, 1.0}};
  const IterationCost warm = ServingCostModel(s).cost(decode_shape(4, 64));
  const double factor = 6775296.0 / (16 * 1048576.0);
  const double stream_s = 6226432.0 / (0.01 * s.cluster.gpu.hbm_bandwidth_Bps);
  EXPECT_NEAR(cold.compute_s - warm.compute_s, (1 - factor) * stream_s, 1e-9 * stream_s);
  EXPECT_DOUBLE_EQ(warm.weight_bytes, cold.weight_bytes);
}

// A device that measured its serving attention's bandwidth (kernel_efficiency
// "kv_cache_attention", made up here: 5% of HBM) prices a long-context decode's cache
// read at that rate; without it, at memory_efficiency.
TEST(DecodePass, KvCacheReadAtTheMeasuredAttentionBandwidth) {
  Scenario s = test::serving_scenario("llama2-7b", "dgx-a100-80gb", 1, 1, 1, 1, 128, 128);
  const double plain = ServingCostModel(s).cost(decode_shape(8, 4096)).compute_s;
  s.cluster.gpu.kernel_efficiency["kv_cache_attention"] = {{{1, 0.05}}, {}};
  const double slow = ServingCostModel(s).cost(decode_shape(8, 4096)).compute_s;
  const double kv_read = 8 * 4096.0 * 524288 / 32;  // one layer's K,V for 8 sequences
  EXPECT_GT(slow, plain);
  EXPECT_GT(slow - plain, 32 * kv_read / (2039e9 * 0.05) * 0.5);  // most of the 32 layers' reads at 5%
}

// MLA's absorbed decode at its own measured rate (kernel_efficiency "kv_cache_attention_mla",
// made up here: 0.01% of the A100's 2,039 GB/s, so that its cache read dominates). tiny-mla's
// 4 layers each read 8 sequences x 128 cached tokens x (kv_lora 64 + rope 16) x 2 bytes =
// 163,840 B of latent cache (plus q, o and the 8 new rows: under 10% more), 0.80 ms a layer at
// that rate: the pass grows by between 0.9 x 3.21 ms and 1.1 x that. The figure prices
// nothing else: Llama-2-7B's decode (no MLA) stays as it was.
TEST(DecodePass, MlaAbsorbedAttentionAtItsOwnMeasuredRate) {
  Scenario s = test::serving_scenario("tiny-mla", "dgx-a100-80gb", 1, 1, 1, 1, 128, 128);
  const double plain = ServingCostModel(s).cost(decode_shape(8, 128)).compute_s;
  s.cluster.gpu.kernel_efficiency["kv_cache_attention_mla"] = {{{1, 1e-4}}, {}};
  const double slow = ServingCostModel(s).cost(decode_shape(8, 128)).compute_s;
  const double latent_s = 4 * 163840.0 / (2039e9 * 1e-4);
  EXPECT_GT(slow - plain, 0.9 * latent_s);
  EXPECT_LT(slow - plain, 1.1 * latent_s);
  Scenario llama = test::serving_scenario("llama2-7b", "dgx-a100-80gb", 1, 1, 1, 1, 128, 128);
  const double llama_plain = ServingCostModel(llama).cost(decode_shape(8, 128)).compute_s;
  llama.cluster.gpu.kernel_efficiency["kv_cache_attention_mla"] = {{{1, 1e-4}}, {}};
  EXPECT_DOUBLE_EQ(ServingCostModel(llama).cost(decode_shape(8, 128)).compute_s, llama_plain);
}

// The attention's item floor (kv_attention_latency) counts each sequence's cache once per
// KV head on this GPU: Llama-2-7B's 32 heads, 16 a GPU at TP 2. 256 sequences of 128 cached
// tokens at 1 us an item take 256 x 32 x 1 us = 8.19 ms a layer, where their 0.54 GB of K,V
// read in about 0.3 ms (A100, 0.85 x 2,039 GB/s): the pass grows by 32 layers x (8.19 - 0.3)
// ms, over 0.9 of the items' 262 ms and under all of it; at TP 2 by half that.
TEST(DecodePass, KvAttentionItemsAreSequencesTimesKvHeadsOnTheGpu) {
  for (int tp : {1, 2}) {
    Scenario s = test::serving_scenario("llama2-7b", "dgx-a100-80gb", tp, tp, 1, 1, 128, 128);
    const double plain = ServingCostModel(s).cost(decode_shape(256, 128)).compute_s;
    s.cluster.gpu.kv_attention_latency.item_s = 1e-6;
    const double floored = ServingCostModel(s).cost(decode_shape(256, 128)).compute_s;
    const double items_s = 32.0 * 256 * (32 / tp) * 1e-6;  // 32 layers
    EXPECT_GT(floored - plain, 0.9 * items_s) << "tp " << tp;
    EXPECT_LT(floored - plain, items_s) << "tp " << tp;
  }
}

// A straggler fraction s makes every TP collective of a serving pass wait s x the compute
// since the last one, as in the training step: the pass's TP time grows by close to s x
// its compute (every op list of a TP pass holds a collective); one GPU alone waits for nobody.
TEST(DecodePass, TensorParallelCollectivesWaitForTheStraggler) {
  Scenario tp2 = test::serving_scenario("llama2-7b", "dgx-a100-80gb", 2, 2, 1, 1, 128, 128);
  const IterationCost even = ServingCostModel(tp2).cost(decode_shape(8, 1024));
  tp2.cluster.straggler = 0.1;
  const IterationCost late = ServingCostModel(tp2).cost(decode_shape(8, 1024));
  EXPECT_DOUBLE_EQ(late.compute_s, even.compute_s);
  EXPECT_GT(late.tp_comm_s - even.tp_comm_s, 0.09 * even.compute_s);
  EXPECT_LE(late.tp_comm_s - even.tp_comm_s, 0.1 * even.compute_s * (1 + 1e-12));
  Scenario one = test::serving_scenario("llama2-7b", "dgx-a100-80gb", 1, 1, 1, 1, 128, 128);
  const double alone = ServingCostModel(one).cost(decode_shape(8, 1024)).latency_s();
  one.cluster.straggler = 0.1;
  EXPECT_DOUBLE_EQ(ServingCostModel(one).cost(decode_shape(8, 1024)).latency_s(), alone);
}

// Roofline bounds from the A100 datasheet (2,039 GB/s, 312 TFLOP/s fp16): a decode pass
// cannot beat reading its weights and cache; a long prefill cannot beat its FLOPs.
TEST(Passes, DecodeIsBoundByMemoryAndPrefillByMath) {
  const Scenario s = test::serving_scenario("llama2-7b", "dgx-a100-80gb", 1, 1, 1, 1, 128, 128);
  const ServingCostModel model(s);
  const IterationCost decode = model.cost(decode_shape(1, 1024));
  const double kv_read = 1024.0 * 524288;  // the whole context's K,V
  EXPECT_GT(decode.latency_s(), (2.0 * (kMatrixParams + kLmHeadParams) + kv_read) / 2039e9);
  EXPECT_LT(decode.latency_s(), 3 * (2.0 * (kMatrixParams + kLmHeadParams) + kv_read) / 2039e9);
  const IterationCost prefill = model.cost(prefill_shape(1, 2048));
  const double flops = 2.0 * 2048 * kMatrixParams;  // linear layers alone, 2 FLOPs per weight per token
  EXPECT_GT(prefill.latency_s(), flops / 312e12);
}

// Attention pairs, full rectangle as the op list counts FLOPs (no causal halving): a
// prompt of s tokens has s^2; a decode step with c tokens of context attends to c keys.
TEST(Passes, AttentionIsQuadraticInThePrompt) {
  EXPECT_DOUBLE_EQ(prefill_shape(1, 4).attention_pairs, 16);
  EXPECT_DOUBLE_EQ(decode_shape(3, 7).attention_pairs, 21);
  IterationShape chunk;
  chunk.add_chunk(6, 2, false);  // tokens 7 and 8 of a prompt: 2 queries x 8 keys
  EXPECT_DOUBLE_EQ(chunk.attention_pairs, 16);
  EXPECT_EQ(chunk.sampled, 0);
  const Scenario s = test::serving_scenario("llama2-7b", "dgx-a100-80gb", 1, 1, 1, 1, 128, 128);
  const auto attn_flops = [&](std::int64_t len) {
    for (const LayerOp& op : build_iteration_layer_ops(s.model, 0, s.plan, *s.inference, prefill_shape(1, len)))
      if (op.kind == OpKind::attention) return op.fwd_flops;
    return 0.0;
  };
  EXPECT_NEAR(attn_flops(8192) / attn_flops(4096), 4.0, 0.001);
}

// TensorRT-LLM <= 0.9 (stack `trtllm`, serving_decode_shared_kv_group 8) read a KV head once
// for its query heads only in XQA's 8-per-KV-head grouping; Mistral's 4 query heads a KV head
// each read it (masked MHA): a decode step reads the cache 4 times, a prefill once, and MHA
// (1 a KV head) and Llama-2 70B's 8 a KV head once.
TEST(Passes, DecodeKvReadsFollowTheStacksSharedGroup) {
  Scenario s = test::serving_scenario("llama2-7b", "dgx-h100", 1, 1, 1, 1, 128, 128, "fp16", "fp16");
  const auto attn_bytes = [&](std::int64_t kv_heads, const IterationShape& shape, int shared) {
    s.model.kv_heads = kv_heads;
    for (const LayerOp& op : build_iteration_layer_ops(s.model, 0, s.plan, *s.inference, shape, shared))
      if (op.kind == OpKind::attention) return op.fwd_bytes;
    return std::int64_t{0};
  };
  const IterationShape decode = decode_shape(4, 1000);
  // 8 KV heads x 128 wide, K and V, 2 bytes: 4,096 bytes a cached token; 3 more reads of each
  EXPECT_EQ(attn_bytes(8, decode, 8) - attn_bytes(8, decode, 0), 3 * decode.kv_read_tokens * 4096);
  EXPECT_EQ(attn_bytes(32, decode, 8), attn_bytes(32, decode, 0));  // MHA
  EXPECT_EQ(attn_bytes(4, decode, 8), attn_bytes(4, decode, 0));    // 8 a KV head: XQA
  EXPECT_EQ(attn_bytes(8, prefill_shape(1, 512), 8), attn_bytes(8, prefill_shape(1, 512), 0));
  EXPECT_EQ(catalog_stack("trtllm").serving_decode_shared_kv_group, 8);
  EXPECT_EQ(catalog_stack("trtllm-v1").serving_decode_shared_kv_group, 0);  // XQA for every group
}

// SGLang's FlashInfer backend before PR #8624 (serving_decode_cuda_core_group 4) decodes a
// 16-bit cache with up to 4 query heads per KV head on CUDA cores: Llama-3-8B's 32/8 heads do,
// 70B-style 8 a KV head, an fp8 cache, a prefill and a stack without the key do not.
TEST(Passes, DecodeRunsOnCudaCoresUpToTheStacksGroup) {
  Scenario s = test::serving_scenario("llama3-8b", "dgx-h200", 1, 1, 1, 1, 128, 128, "bf16", "bf16");
  const auto on_cuda_cores = [&](std::int64_t kv_heads, const IterationShape& shape, int group) {
    s.model.kv_heads = kv_heads;
    for (const LayerOp& op : build_iteration_layer_ops(s.model, 0, s.plan, *s.inference, shape, 0, group))
      if (op.kind == OpKind::attention) return op.cuda_cores;
    return false;
  };
  EXPECT_TRUE(on_cuda_cores(8, decode_shape(4, 1000), 4));
  EXPECT_FALSE(on_cuda_cores(8, decode_shape(4, 1000), 0));
  EXPECT_FALSE(on_cuda_cores(4, decode_shape(4, 1000), 4));  // 8 a KV head: tensor cores
  EXPECT_FALSE(on_cuda_cores(8, prefill_shape(1, 512), 4));
  s.inference->kv_dtype = Dtype::fp8;
  EXPECT_FALSE(on_cuda_cores(8, decode_shape(4, 1000), 4));
}

// Priced (sim/cost/compute_cost.cpp attention_cost): 50 sequences of 5,000 tokens on an H200,
// per layer 250,000 pairs x 2 x (4,096 + 4,096) = 4.096 GFLOP of math plus the kernel's fixed
// share a cached token, 6.0 x its 1.025 GB (kFlashInferCudaCoreTokenHeads) = 10.246 G of work at
// 0.367 x 67 TFLOP/s (the catalog's CUDA-core figure) = 416.7 us, against the 1.025 GB of K,V at
// 0.90 x 4.8 TB/s = 237.3 us: the step grows by 32 x 179.4 us = 5.74 ms (1.77 ms before s11's
// fixed share: 4.096 GFLOP at 0.209 x 67 TFLOP/s).
TEST(DecodePass, CudaCoreDecodeIsBoundByTheFp32Rate) {
  Scenario s = test::serving_scenario("llama3-8b", "dgx-h200", 1, 1, 1, 1, 128, 128, "fp8", "bf16");
  const double tensor = ServingCostModel(s).cost(decode_shape(50, 5000)).compute_s;
  s.stack.serving_decode_cuda_core_group = 4;
  const double cuda = ServingCostModel(s).cost(decode_shape(50, 5000)).compute_s;
  const double bytes = 250050.0 * 4096 + 50 * 8192 * 2;  // K,V read and written, Q and O
  const double per_layer = (4.096e9 + 6.0 * bytes) / (0.367 * 67e12) - bytes / (0.90 * 4.8e12);
  EXPECT_NEAR(cuda - tensor, 32 * per_layer, 0.02 * 32 * per_layer);
}

// SGLang's FlashInfer backend (serving_prefix_attention_fa2) runs a prompt chunk's queries
// over its cached prefix on the FA2 template. A chunk of 8,192 tokens after 8,192 cached on an
// H200, Llama-3-8B: per layer 8,192 x 8,192 prefix pairs x 2 x (4,096 + 4,096) = 1.0995
// TFLOP moves from the attention's 0.75 of 989 TFLOP/s to kv_attention_fa2_efficiency's 0.337:
// 1.4823 ms -> 3.2989 ms, +1.8166 ms a layer, +58.1 ms the pass. The first chunk (no
// prefix) and a decode step do not change.
TEST(PrefillPass, ACachedPrefixRunsAtTheFa2Rate) {
  Scenario s = test::serving_scenario("llama3-8b", "dgx-h200", 1, 1, 1, 1, 128, 128, "fp8", "bf16");
  IterationShape second;
  second.add_chunk(8192, 8192, true);
  const IterationShape first = prefill_shape(1, 8192);
  const auto pass_s = [&](const IterationShape& shape) { return ServingCostModel(s).cost(shape).compute_s; };
  const double before = pass_s(second), first_before = pass_s(first), decode_before = pass_s(decode_shape(8, 9000));
  s.stack.serving_prefix_attention_fa2 = true;
  const double flops = 8192.0 * 8192 * 2 * 8192;
  const double per_layer = flops / (989e12 * 0.337) - flops / (989e12 * 0.75);
  EXPECT_NEAR(pass_s(second) - before, 32 * per_layer, 0.01 * 32 * per_layer);
  EXPECT_DOUBLE_EQ(pass_s(first), first_before);
  EXPECT_DOUBLE_EQ(pass_s(decode_shape(8, 9000)), decode_before);
  EXPECT_FALSE(catalog_stack("sglang").serving_prefix_attention_fa2);  // today's SGLang: FA3 on Hopper
}

// A prompt chunk's queries over its own keys: the square counted whole, of which a causal kernel
// skips the masked half. IterationShape counts it (chunks only, not decode rows).
TEST(PrefillPass, ShapeCountsEachChunksOwnSquare) {
  IterationShape s;
  s.add_chunk(1000, 500, false);  // 500 x 500 = 250,000 pairs of its own, 500 rows
  s.add_chunk(4999, 1, true);     // a decode row: none
  s.repeat(3);
  EXPECT_DOUBLE_EQ(s.square_pairs, 750000.0);
  EXPECT_EQ(s.square_rows, 1500);
  EXPECT_DOUBLE_EQ(s.prefix_pairs, 3 * 500.0 * 1000);
}

// serving_prefill_attention: flash3 prices that square on the H200's flash3 causal curve
// (FA3 repo's H100 hd128 causal rates against the whole square; h200-sxm.yaml) at the chunk's
// length, instead of attention_efficiency's 0.75. Llama-3-8B, per layer a chunk of c tokens
// runs c x c x 2 x (4,096 + 4,096) FLOPs of its own:
//   c = 8,192: 1.0995 TFLOP, 1.4823 ms at 0.75 x 989 -> 0.9132 ms at 1.2174 x 989: -0.5691 ms,
//     x 32 layers = -18.21 ms; the same chunk after 8,192 cached moves by the same (its prefix
//     pairs keep their rate);
//   c = 2,048: 68.72 GFLOP, 92.65 us -> 65.95 us at 1.0536 (the curve's 2k point): -26.70 us,
//     x 32 = -0.854 ms.
// A decode step does not move. The power limit's GEMM clock is left out: it follows the pass's
// tensor share, which the faster attention lowers (at 2,048 tokens the pass gains 3.6% more).
TEST(PrefillPass, AChunksOwnKeysRunAtTheCausalKernelsRate) {
  Scenario s = test::serving_scenario("llama3-8b", "dgx-h200", 1, 1, 1, 1, 128, 128, "fp8", "bf16");
  s.cluster.gpu.power_limited_gemm.reset();
  IterationShape second;
  second.add_chunk(8192, 8192, true);
  const auto pass_s = [&](const IterationShape& shape) { return ServingCostModel(s).cost(shape).compute_s; };
  const double first_before = pass_s(prefill_shape(1, 8192)), second_before = pass_s(second);
  const double short_before = pass_s(prefill_shape(1, 2048)), decode_before = pass_s(decode_shape(8, 9000));
  s.stack.serving_prefill_attention = "flash3";
  EXPECT_NEAR(pass_s(prefill_shape(1, 8192)) - first_before, -18.21e-3, 0.01 * 18.21e-3);
  EXPECT_NEAR(pass_s(second) - second_before, -18.21e-3, 0.01 * 18.21e-3);
  EXPECT_NEAR(pass_s(prefill_shape(1, 2048)) - short_before, -0.854e-3, 0.01 * 0.854e-3);
  EXPECT_DOUBLE_EQ(pass_s(decode_shape(8, 9000)), decode_before);
  EXPECT_TRUE(catalog_stack("vllm-v1").serving_prefill_attention.empty());  // presets keep today's price
}

// vLLM's and SGLang's fp8 linears cast their 16-bit input to fp8 in a kernel of their own
// (serving_fp8_input_cast): Llama-3-8B, one 8,192-token prompt on an H200. Per layer the four
// GEMMs' inputs are 8,192 x (4,096 qkv + 4,096 o + 4,096 gate_up + 14,336 down) = 218,103,808
// values, each read as 2 bytes and written as 1: 654.31 MB at 0.85 x 4.8 TB/s (memory_efficiency)
// = 160.37 us, plus 4 launches of 4 us: 176.37 us, x 32 layers = 5.644 ms. A decode step of 8
// rows: 639 kB, 0.157 us, + 16 us of launches, x 32 = 0.517 ms. The 16-bit logits layer casts
// nothing. The power limit's clock is left out (it follows the pass's tensor share).
TEST(PrefillPass, Fp8LinearsCastTheirInputInAKernelOfTheirOwn) {
  Scenario s = test::serving_scenario("llama3-8b", "dgx-h200", 1, 1, 1, 1, 128, 128, "fp8", "bf16");
  s.cluster.gpu.power_limited_gemm.reset();
  s.stack.serving_fp8_input_cast = false;
  const auto pass_s = [&](const IterationShape& shape) { return ServingCostModel(s).cost(shape).compute_s; };
  const double prefill_before = pass_s(prefill_shape(1, 8192)), decode_before = pass_s(decode_shape(8, 9000));
  s.stack.serving_fp8_input_cast = true;
  EXPECT_NEAR(pass_s(prefill_shape(1, 8192)) - prefill_before, 5.644e-3, 0.005 * 5.644e-3);
  EXPECT_NEAR(pass_s(decode_shape(8, 9000)) - decode_before, 0.517e-3, 0.005 * 0.517e-3);
  // no preset sets it yet (docs/scenario/ext-keys-stack.md: it moves the R1 judges away)
  EXPECT_FALSE(catalog_stack("vllm-v1").serving_fp8_input_cast);
  EXPECT_FALSE(catalog_stack("sglang").serving_fp8_input_cast);
}

// vLLM 0.8's FlashAttention-3 paged decode (serving_decode_fa3_m128) reads the cache at the
// GPU's kv_attention_fa3_m128_efficiency: 50 sequences of 5,000 tokens on an H200, per layer
// 1.025 GB of q, o and K,V (as above) at 0.569 x 4.8 TB/s = 375.3 us instead of 0.90 x 4.8 TB/s
// = 237.3 us: the step grows by 32 x 138.0 us = 4.42 ms.
TEST(DecodePass, Fa3M128DecodeReadsTheCacheAtItsOwnRate) {
  Scenario s = test::serving_scenario("llama3-8b", "dgx-h200", 1, 1, 1, 1, 128, 128, "fp8", "bf16");
  const double tensor = ServingCostModel(s).cost(decode_shape(50, 5000)).compute_s;
  s.stack.serving_decode_fa3_m128 = true;
  const double fa3 = ServingCostModel(s).cost(decode_shape(50, 5000)).compute_s;
  const double bytes = 250050.0 * 4096 + 50 * 8192 * 2;
  const double per_layer = bytes / (0.569 * 4.8e12) - bytes / (0.90 * 4.8e12);
  EXPECT_NEAR(fa3 - tensor, 32 * per_layer, 0.02 * 32 * per_layer);
}

TEST(Passes, ExpertsTouchedSaturateWithTokens) {
  EXPECT_DOUBLE_EQ(expected_experts_touched(8, 2, 1), 2.0);  // one token, top-2
  EXPECT_NEAR(expected_experts_touched(8, 2, 64), 8.0, 1e-6);
  EXPECT_NEAR(expected_experts_touched(8, 2, 2), 8 * (1 - 0.75 * 0.75), 1e-12);
}

TEST(Passes, PipelineStagesSplitTheLayers) {
  const Scenario s = test::serving_scenario("llama2-7b", "dgx-a100-80gb", 2, 1, 2, 1, 128, 128);
  const IterationCost c = ServingCostModel(s).cost(decode_shape(8, 300));
  ASSERT_EQ(c.stage_s.size(), 2u);
  EXPECT_NEAR(c.stage_s[0] / c.stage_s[1], 1.0, 0.1);  // 16 layers each; embedding vs head
  EXPECT_GT(c.p2p_s, 0);
  EXPECT_DOUBLE_EQ(c.latency_s(), c.stage_s[0] + c.stage_s[1] + c.p2p_s);
}

// The pass op by op (what `twinsim compare` lines up with the executor's profile): the
// ops' times x calls add up to the pass, under the executor's names.
double ops_sum(const std::vector<PassOpTime>& ops) {
  double t = 0;
  for (const PassOpTime& op : ops) t += op.time_s * op.count;
  return t;
}

const PassOpTime& op_named(const std::vector<PassOpTime>& ops, const std::string& name) {
  for (const PassOpTime& op : ops)
    if (op.name == name) return op;
  throw std::runtime_error("no op " + name);
}

// Issue 61: the per-pass MPI cost of a TP-2 decode on the host is already a measured figure.
// tiny-llama TP 2, 4 sequences: each tp_exit all-reduces 4 rows x 256 x 4 B = 4,096 B. With
// the 2-rank all-reduce measured at 4,096 B (hardware/calibrated/host.yaml: busbw 2.76383
// GB/s, median 1.48 us) and no straggler, a call costs 4,096 x 2(2-1)/2 / 2.76383e9 =
// 1.482 us. The executor's calls measured 1.0-1.5 us from the later rank's arrival on the quiet
// guest (s14's run, scripts/decode_sync.py), 2.5-3.7 us loaded: the TP-2 TPOT misses of
// -27..-33% are not a missing MPI cost (the ranks' compute moved 1.4-3.3x between runs).
TEST(DecodePass, TheTinyLlamaTp2AllReduceIsTheHostsMeasuredSmallCall) {
  Scenario s = test::serving_scenario("tiny-llama", "dgx-a100-80gb", 2, 2, 1, 4, 64, 32, "fp32", "fp32");
  s.cluster.straggler = 0;
  s.cluster.intra_node.measured_busbw["all_reduce"][2] = {{4096, 2.76383e9}};
  const std::vector<PassOpTime> ops = ServingCostModel(s).op_times(decode_shape(4, 64));
  const double call_s = 4096.0 / 2.76383e9;
  EXPECT_DOUBLE_EQ(op_named(ops, "attn.tp_exit.fwd").count, 4);
  EXPECT_NEAR(op_named(ops, "attn.tp_exit.fwd").time_s, call_s, 1e-12);
  EXPECT_NEAR(op_named(ops, "mlp.tp_exit.fwd").time_s, call_s, 1e-12);
}

TEST(PassOps, SumToTheStagesOfThePass) {
  // TP 2 x PP 2: collectives are ops too; the transfer between stages is not
  const Scenario s = test::serving_scenario("llama2-7b", "dgx-a100-80gb", 4, 2, 2, 8, 512, 64);
  const ServingCostModel model(s);
  for (const IterationShape& shape : {prefill_shape(8, 512), decode_shape(8, 600)}) {
    const IterationCost c = model.cost(shape);
    const double stages = c.stage_s[0] + c.stage_s[1];
    EXPECT_NEAR(ops_sum(model.op_times(shape)), stages, 1e-12 * stages);
    EXPECT_GT(c.latency_s(), stages);  // plus the p2p transfer
  }
  const std::vector<PassOpTime> ops = model.op_times(decode_shape(8, 600));
  EXPECT_DOUBLE_EQ(op_named(ops, "attn.qkv.fwd").count, 32);  // every layer of both stages
  EXPECT_DOUBLE_EQ(op_named(ops, "mlp.down.fwd").count, 32);
  EXPECT_DOUBLE_EQ(op_named(ops, "attn.tp_exit.fwd").count, 32);
  EXPECT_DOUBLE_EQ(op_named(ops, "head.logits.fwd").count, 1);
  EXPECT_DOUBLE_EQ(op_named(ops, "embedding.lookup.fwd").count, 1);
  EXPECT_DOUBLE_EQ(op_named(ops, "head.gather.fwd").count, 1);  // TP gathers the logits
}

TEST(PassOps, BatchPredictionKeepsPrefillAndTheMeanDecodePass) {
  const Scenario s = test::serving_scenario("llama2-7b", "dgx-a100-80gb", 1, 1, 1, 4, 256, 33);
  const InferencePrediction p = predict_inference(s);
  EXPECT_NEAR(ops_sum(p.prefill_ops), p.ttft_s, 1e-12 * p.ttft_s);
  EXPECT_NEAR(ops_sum(p.decode_ops), p.tpot_s, 1e-12 * p.tpot_s);  // one stage: no transfers
  EXPECT_EQ(p.decode_passes, 32);
  // attention reads a cache that grows each pass: its mean call lies between the first and the last
  const ServingCostModel model(s);
  const double first = op_named(model.op_times(decode_shape(4, 257)), "attn.core.fwd").time_s;
  const double last = op_named(model.op_times(decode_shape(4, 288)), "attn.core.fwd").time_s;
  const double mean = op_named(p.decode_ops, "attn.core.fwd").time_s;
  EXPECT_LT(first, mean);
  EXPECT_LT(mean, last);
  const nlohmann::json j = to_json(p, *s.inference, s.plan.tp);
  EXPECT_EQ(j["prefill"]["ops"].size(), p.prefill_ops.size());
  EXPECT_EQ(j["decode"]["passes"], 32);
  EXPECT_EQ(j["decode"]["ops"][0]["name"], "embedding.lookup.fwd");
}

}  // namespace
}  // namespace twinsim
