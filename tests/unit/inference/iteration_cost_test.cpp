// Prefill and decode passes: what they compute and read, checked against hand arithmetic
// from the Llama 2 configs and against roofline bounds of the datasheets.
#include <gtest/gtest.h>

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

// Causal attention pairs: a prompt of s tokens has s(s+1)/2; a decode step with c tokens of
// context attends to c keys.
TEST(Passes, AttentionIsQuadraticInThePrompt) {
  EXPECT_DOUBLE_EQ(prefill_shape(1, 4).attention_pairs, 10);
  EXPECT_DOUBLE_EQ(decode_shape(3, 7).attention_pairs, 21);
  IterationShape chunk;
  chunk.add_chunk(6, 2, false);  // tokens 7 and 8 of a prompt: 7 + 8 keys
  EXPECT_DOUBLE_EQ(chunk.attention_pairs, 15);
  EXPECT_EQ(chunk.sampled, 0);
  const Scenario s = test::serving_scenario("llama2-7b", "dgx-a100-80gb", 1, 1, 1, 1, 128, 128);
  const auto attn_flops = [&](std::int64_t len) {
    for (const LayerOp& op : build_iteration_layer_ops(s.model, 0, s.plan, *s.inference, prefill_shape(1, len)))
      if (op.kind == OpKind::attention) return op.fwd_flops;
    return 0.0;
  };
  EXPECT_NEAR(attn_flops(8192) / attn_flops(4096), 4.0, 0.001);
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

}  // namespace
}  // namespace twinsim
