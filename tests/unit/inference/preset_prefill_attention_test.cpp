// A stack preset's serving_prefill_attention (hardware/prefill_attention.hpp): the kernel runs
// where the GPU measures its causal curve, the default pricing elsewhere, and the serve report
// says which ran; a scenario naming the kernel itself is still refused on a GPU without it.
// No catalog preset sets the key, so these set the preset's choice on the read stack.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "hardware/prefill_attention.hpp"
#include "scenario/validate.hpp"
#include "serving_scenarios.hpp"
#include "sim/inference/iteration_cost.hpp"
#include "sim/inference/iteration_ops.hpp"
#include "sim/inference/serve_run.hpp"

namespace twinsim {
namespace {

// One 8,192-token prompt's prefill pass with the stack's prefill kernel set to `kernel`, chosen
// by a preset (`from_preset`) or by the scenario.
double prefill_pass_s(Scenario s, const std::string& kernel, bool from_preset) {
  s.cluster.gpu.power_limited_gemm.reset();
  s.stack.serving_prefill_attention = kernel;
  s.stack.serving_prefill_attention_from_preset = from_preset;
  return ServingCostModel(s).cost(prefill_shape(1, 8192)).compute_s;
}

// On the H200 (flash3's causal curve in h200-sxm.yaml) the preset's flash3 prices the prompt as
// the scenario's own choice does: 18.21 ms less than the default for Llama-3-8B (the derivation
// in iteration_cost_test.cpp, PrefillPass.AChunksOwnKeysRunAtTheCausalKernelsRate).
TEST(PresetPrefillAttention, RunsWhereTheGpuMeasuresTheKernel) {
  const Scenario s = test::serving_scenario("llama3-8b", "dgx-h200", 1, 1, 1, 1, 128, 128, "fp8", "bf16");
  ASSERT_TRUE(measures_causal_attention(s.cluster.gpu, "flash3"));
  const double none = prefill_pass_s(s, "", true), preset = prefill_pass_s(s, "flash3", true);
  EXPECT_DOUBLE_EQ(preset, prefill_pass_s(s, "flash3", false));
  EXPECT_NEAR(preset - none, -18.21e-3, 0.01 * 18.21e-3);
  Scenario chosen = s;
  chosen.stack.serving_prefill_attention = "flash3";
  chosen.stack.serving_prefill_attention_from_preset = true;
  EXPECT_EQ(prefill_attention_that_runs(chosen.stack, chosen.cluster.gpu), "flash3");
}

// The A100 catalog GPU has no flash3 curve: the preset's flash3 loads, prices the prompt exactly
// as no kernel does, and runs none; the same kernel named by the scenario is refused.
TEST(PresetPrefillAttention, FallsBackToTheDefaultWhereTheGpuLacksTheKernel) {
  Scenario s = test::serving_scenario("llama3-8b", "dgx-a100-80gb", 1, 1, 1, 1, 128, 128, "bf16", "bf16");
  ASSERT_FALSE(measures_causal_attention(s.cluster.gpu, "flash3"));
  EXPECT_DOUBLE_EQ(prefill_pass_s(s, "flash3", true), prefill_pass_s(s, "", true));
  s.stack.serving_prefill_attention = "flash3";
  s.stack.serving_prefill_attention_from_preset = true;
  EXPECT_EQ(prefill_attention_that_runs(s.stack, s.cluster.gpu), "");
  Scenario preset = s;
  EXPECT_NO_THROW(resolve_and_validate(preset));
  s.stack.serving_prefill_attention_from_preset = false;
  EXPECT_THROW(resolve_and_validate(s), ScenarioError);
}

// A kernel the scenario's own stack mapping names is the scenario's, not the preset's (refused
// where the GPU lacks it: reject_test.cpp); a preset without the key names none.
TEST(PresetPrefillAttention, AScenariosOwnKernelIsNotThePresets) {
  const Scenario own = load_scenario_text(
      "model: llama3-8b\ncluster: dgx-h200\nstack: {preset: vllm-v1, serving_prefill_attention: flash3}\n"
      "inference: {prompt_len: 128, output_len: 4, batch: 2}\nplan: {tp: 1}\n");
  EXPECT_EQ(own.stack.serving_prefill_attention, "flash3");
  EXPECT_FALSE(own.stack.serving_prefill_attention_from_preset);
  test::expect_refused(
      [](const std::string& text) { load_scenario_text(text); },
      {{"model: llama3-8b\ncluster: dgx-a100-80gb\nstack: {preset: vllm-v1, serving_prefill_attention: "
        "flash3}\ninference: {prompt_len: 128, output_len: 4, batch: 2}\nplan: {tp: 1}\n",
        "stack.serving_prefill_attention=flash3 needs the GPU's causal curves"}});
}

// serve's report names the chosen kernel and the one that ran, and is silent without a choice.
TEST(PresetPrefillAttention, TheReportSaysWhichKernelRan) {
  const auto report = [](const std::string& node, const std::string& kernel) {
    Scenario s = test::serving_scenario("llama3-8b", node, 1, 1, 1, 2, 128, 4, "bf16", "bf16");
    s.stack.serving_prefill_attention = kernel;
    s.stack.serving_prefill_attention_from_preset = true;
    return run_offline_benchmark(s).json;
  };
  const nlohmann::json h200 = report("dgx-h200", "flash3"), a100 = report("dgx-a100-80gb", "flash3");
  EXPECT_EQ(h200["prefill_attention"]["chosen"], "flash3");
  EXPECT_EQ(h200["prefill_attention"]["ran"], "flash3");
  EXPECT_EQ(a100["prefill_attention"]["chosen"], "flash3");
  EXPECT_EQ(a100["prefill_attention"]["ran"], "none");
  EXPECT_FALSE(report("dgx-a100-80gb", "").contains("prefill_attention"));
}

}  // namespace
}  // namespace twinsim
