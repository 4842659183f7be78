// stack.moe_gemm_generation: a serving engine whose routed-expert grouped GEMM was built for an
// older GPU generation than it runs on (TensorRT-LLM <= 0.9: CUTLASS's Sm80 MoE GEMM on Hopper)
// gets the GPU's sm80_gemm_scale of the rate. Checked by hand on Mixtral 8x7B at TP 2 with
// 16-bit experts (h 4096, expert ffn 14336 / 2 a GPU, 8 experts, top 2): a long prefill's experts
// are math-bound, so their GEMMs take 1 / 0.728 as long (CUTLASS's SM90 grouped GEMM against its
// SM80 one on an H100: 160.5 / 116.9 TFLOP/s) times the native kernel's 16-bit rows curve over
// the 8-bit one the Sm80 kernel keeps (h100-sxm.yaml at 2,048 rows an expert, halfway
// in log rows between its points, linear in efficiency: (0.764 + 0.727) / 2 against (0.5452 +
// 0.6016) / 2); a batch-1 decode step's experts are bound by their
// weights' read, which the kernel's generation does not change; the A100 runs its own generation.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "scenario/load.hpp"
#include "sim/inference/iteration_cost.hpp"
#include "sim/inference/iteration_ops.hpp"
#include "tests/unit/scenario/expect_refused.hpp"

namespace twinsim {
namespace {

Scenario mixtral(const std::string& node, const std::string& generation, std::int64_t prompt) {
  Scenario s = load_scenario_text(
      "model: mixtral-8x7b\ncluster: {preset: " + node + ", gpus_per_node: 2, nodes: 1}\n" +
      "inference: {prompt_len: " + std::to_string(prompt) + ", output_len: 16, batch: 1, weight_dtype: fp16}\n" +
      "plan: {tp: 2, pp: 1}\nstack: {preset: none, moe_gemm_generation: " + generation + "}\n");
  s.cluster.gpu.power_limited_gemm.reset();  // the curves' clock for both generations
  return s;
}

double op_time(const Scenario& s, const IterationShape& shape, const std::string& name) {
  for (const PassOpTime& op : ServingCostModel(s).op_times(shape))
    if (op.name == name) return op.time_s;
  ADD_FAILURE() << "no op " << name;
  return 0;
}

TEST(MoeGemmGeneration, Sm80ExpertsOnAnH100TakeTheMeasuredShareLonger) {
  const Scenario native = mixtral("dgx-h100", "native", 8192);
  const Scenario sm80 = mixtral("dgx-h100", "sm80", 8192);
  EXPECT_EQ(sm80.stack.moe_gemm_generation, KernelGeneration::sm80);
  EXPECT_DOUBLE_EQ(sm80.cluster.gpu.sm80_gemm_scale, 0.728);
  const IterationShape prefill = prefill_shape(1, 8192);  // 16,384 routed rows, 2,048 an expert
  const double launch = native.cluster.gpu.kernel_launch_s;
  for (const char* experts : {"moe.experts.gate_up.fwd", "moe.experts.down.fwd"}) {
    const double ratio = (op_time(sm80, prefill, experts) - launch) / (op_time(native, prefill, experts) - launch);
    EXPECT_NEAR(ratio, ((0.764 + 0.727) / 2) / ((0.5452 + 0.6016) / 2) / 0.728, 1e-9) << experts;
  }
  // attention's GEMMs and the router are cuBLAS's, the GPU's own generation
  for (const char* other : {"attn.qkv.fwd", "attn.proj.fwd", "moe.router.fwd"})
    EXPECT_DOUBLE_EQ(op_time(sm80, prefill, other), op_time(native, prefill, other)) << other;
}

// One token routes to 2 experts: their 2 x 4096 x 14336 16-bit weights (235 MB) stream in for
// 2 x 4096 x 14336 x 2 FLOPs, far below any kernel's math rate: the read sets the time.
TEST(MoeGemmGeneration, ABatchOneDecodeStepReadsTheSameWeightsInEitherGeneration) {
  const IterationShape step = decode_shape(1, 1000);
  const Scenario native = mixtral("dgx-h100", "native", 1000);
  const Scenario sm80 = mixtral("dgx-h100", "sm80", 1000);
  EXPECT_DOUBLE_EQ(op_time(sm80, step, "moe.experts.gate_up.fwd"), op_time(native, step, "moe.experts.gate_up.fwd"));
}

TEST(MoeGemmGeneration, AnA100RunsSm80AsItsOwnGeneration) {
  const Scenario native = mixtral("dgx-a100-80gb", "native", 8192);
  const Scenario sm80 = mixtral("dgx-a100-80gb", "sm80", 8192);
  EXPECT_DOUBLE_EQ(sm80.cluster.gpu.sm80_gemm_scale, 1.0);  // the catalog gives the A100 none
  const IterationShape prefill = prefill_shape(1, 8192);
  EXPECT_DOUBLE_EQ(op_time(sm80, prefill, "moe.experts.gate_up.fwd"),
                   op_time(native, prefill, "moe.experts.gate_up.fwd"));
}

TEST(MoeGemmGeneration, TheTrtllmPresetRunsSm80AndOthersTheirOwn) {
  const auto stack_of = [](const std::string& stack) {
    return load_scenario_text(
               "model: mixtral-8x7b\ncluster: {preset: dgx-h100, gpus_per_node: 2, nodes: 1}\n"
               "inference: {prompt_len: 128, weight_dtype: fp16}\nplan: {tp: 2}\nstack: " +
               stack + "\n")
        .stack.moe_gemm_generation;
  };
  EXPECT_EQ(stack_of("trtllm"), KernelGeneration::sm80);
  EXPECT_EQ(stack_of("trtllm-v1"), KernelGeneration::native);
  EXPECT_EQ(stack_of("vllm-v1"), KernelGeneration::native);
  test::expect_refused(
      [](const std::string& value) {
        load_scenario_text(
            "model: mixtral-8x7b\ncluster: {preset: dgx-h100, gpus_per_node: 2, nodes: 1}\n"
            "inference: {prompt_len: 128}\nplan: {tp: 2}\nstack: {preset: none, moe_gemm_generation: " +
            value + "}\n");
      },
      {{"sm90", "moe_gemm_generation"}});
  test::expect_refused(
      [](const std::string& value) {
        load_scenario_text(
            "model: mixtral-8x7b\ncluster: {preset: dgx-h100, gpus_per_node: 2, nodes: 1, gpu: "
            "{preset: h100-sxm, sm80_gemm_scale: " +
            value + "}}\ninference: {prompt_len: 128}\nplan: {tp: 2}\nstack: none\n");
      },
      {{"0", "sm80_gemm_scale"}, {"1.5", "sm80_gemm_scale"}});
}

}  // namespace
}  // namespace twinsim
