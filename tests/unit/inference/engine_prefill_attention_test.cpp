// A serving engine's own measured prefill attention (stack serving_prefill_attention: vllm_fa3,
// GpuSpec::prefill_attention_by_heads): the rate at the chunk length, then between the measured
// (query head, prompt) pair counts of the call, both log-x with the ends held.
#include <gtest/gtest.h>

#include "serving_scenarios.hpp"
#include "sim/inference/iteration_cost.hpp"

namespace twinsim {
namespace {

// Llama-3-8B on one H200 (32 query heads of 128 a GPU, 32 layers), the engine's curves replaced by
// hand-made ones: 16 pairs [[1000, 0.4], [4000, 0.8]], 64 pairs [[1000, 0.6], [4000, 1.0]].
// A 2,000-token chunk lies at the log midpoint of 1,000 and 4,000: 0.6 at 16 pairs, 0.8 at 64.
// Against the same curves held at 0.5 everywhere, a layer's square of p prompts is
// 4 x p x 2,000^2 x 32 x 128 = p x 65.536 GFLOP at 989 TFLOP/s:
//   1 prompt: 32 pairs, the log midpoint of 16 and 64: 0.7; 94.664 - 132.53 us, x 32 = -1.2117 ms
//   2 prompts: 64 pairs: 0.8; 165.66 - 265.06 us, x 32 = -3.1807 ms
//   4 prompts: 128 pairs, past the last measured count: its rate held, 0.8; x 32 = -6.3614 ms
TEST(EnginePrefillAttention, InterpolatesInLengthThenInHeadPromptPairs) {
  Scenario s = test::serving_scenario("llama3-8b", "dgx-h200", 1, 1, 1, 1, 128, 128, "fp8", "bf16");
  s.cluster.gpu.power_limited_gemm.reset();
  s.stack.serving_prefill_attention = "vllm_fa3";
  auto& curves = s.cluster.gpu.prefill_attention_by_heads["vllm_fa3"];
  const auto pass_s = [&](std::int64_t prompts) {
    return ServingCostModel(s).cost(prefill_shape(prompts, 2000)).compute_s;
  };
  curves = {{16, {{1000, 0.5}, {4000, 0.5}}}, {64, {{1000, 0.5}, {4000, 0.5}}}};
  const double flat1 = pass_s(1), flat2 = pass_s(2), flat4 = pass_s(4);
  curves = {{16, {{1000, 0.4}, {4000, 0.8}}}, {64, {{1000, 0.6}, {4000, 1.0}}}};
  EXPECT_NEAR(pass_s(1) - flat1, -1.2117e-3, 0.002 * 1.2117e-3);
  EXPECT_NEAR(pass_s(2) - flat2, -3.1807e-3, 0.002 * 3.1807e-3);
  EXPECT_NEAR(pass_s(4) - flat4, -6.3614e-3, 0.002 * 6.3614e-3);
}

// Below the first measured pair count the first count's rate holds: with 64 and 128 pairs only,
// one prompt's 32 pairs read 64's rate (0.8 at 2,000 tokens), the same as two prompts' 64.
TEST(EnginePrefillAttention, HoldsTheNearestMeasuredPairCountOutsideTheRange) {
  Scenario s = test::serving_scenario("llama3-8b", "dgx-h200", 1, 1, 1, 1, 128, 128, "fp8", "bf16");
  s.cluster.gpu.power_limited_gemm.reset();
  s.stack.serving_prefill_attention = "vllm_fa3";
  auto& curves = s.cluster.gpu.prefill_attention_by_heads["vllm_fa3"];
  curves = {{64, {{1000, 0.6}, {4000, 1.0}}}, {128, {{1000, 0.2}, {4000, 0.2}}}};
  const double measured = ServingCostModel(s).cost(prefill_shape(1, 2000)).compute_s;
  curves = {{64, {{1000, 0.8}, {4000, 0.8}}}, {128, {{1000, 0.2}, {4000, 0.2}}}};
  EXPECT_NEAR(ServingCostModel(s).cost(prefill_shape(1, 2000)).compute_s, measured, 1e-9);
}

// The curves are measured at head width 128 only: another width keeps the default price.
TEST(EnginePrefillAttention, OtherHeadWidthsKeepTheDefaultPrice) {
  Scenario s = test::serving_scenario("llama3-8b", "dgx-h200", 1, 1, 1, 1, 128, 128, "fp8", "bf16");
  s.cluster.gpu.power_limited_gemm.reset();
  s.model.head_dim = 64;
  s.model.heads *= 2;
  s.model.kv_heads *= 2;
  s.stack.serving_prefill_attention = "";
  const double before = ServingCostModel(s).cost(prefill_shape(1, 2000)).compute_s;
  s.stack.serving_prefill_attention = "vllm_fa3";
  EXPECT_DOUBLE_EQ(ServingCostModel(s).cost(prefill_shape(1, 2000)).compute_s, before);
}

}  // namespace
}  // namespace twinsim
