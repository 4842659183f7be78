// plan.fp8_activation_input and plan.fp8_attention are refused where Megatron-core and Transformer
// Engine refuse them, or where twinsim does not count them, on the MLPerf v5.0 LoRA run that sets
// both (scenarios/validation/training/mlperf50-llama2-70b-lora-b200.yaml).
#include <gtest/gtest.h>

#include <string>

#include "scenario/load.hpp"
#include "tests/unit/scenario/expect_refused.hpp"

namespace twinsim {
namespace {

Scenario mlperf_lora(const std::string& set) {
  return load_scenario_file(
      std::string(TWINSIM_SOURCE_DIR) + "/scenarios/validation/training/mlperf50-llama2-70b-lora-b200.yaml", {set});
}

TEST(Fp8ActivationKeys, TheMlperfRunSetsBoth) {
  const Scenario s = mlperf_lora("plan.recompute=none");
  EXPECT_TRUE(s.plan.fp8_activation_input);
  EXPECT_TRUE(s.plan.fp8_attention);
  EXPECT_FALSE(mlperf_lora("plan.fp8_attention=false").plan.fp8_attention);
}

TEST(Fp8ActivationKeys, RefusedWhereTheFrameworkRefusesThem) {
  test::expect_refused(mlperf_lora,
                       {// the fp8 recipe's attention: no fp8 attention without fp8 training
                        {"training.precision=bf16", "plan.fp8_attention"},
                        // Transformer Engine's fused backend only
                        {"plan.flash_attention=false", "plan.fp8_attention"},
                        // Megatron-core: "supported only for SwiGLU"
                        {"model.activation=gelu", "plan.fp8_activation_input"},
                        {"plan.recompute=selective_op", "plan.fp8_attention"}});
}

}  // namespace
}  // namespace twinsim
