// inference.expert_weight_dtype: a MoE model's routed experts in their own weight format (an fp8
// checkpoint served by an engine whose MoE kernel takes only 16-bit experts, TensorRT-LLM <= 0.9).
// Checked by hand on Mixtral 8x7B's config (h 4096, expert ffn 14336, 8 experts, top 2, 32
// layers, 32 query / 8 KV heads of 128) at TP 2: its memory, a decode step's reads, the experts'
// math type, and the refusals.
#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "scenario/errors.hpp"
#include "scenario/load.hpp"
#include "serving_scenarios.hpp"
#include "sim/inference/iteration_cost.hpp"
#include "sim/inference/iteration_ops.hpp"
#include "sim/memory/inference.hpp"
#include "sim/memory/weights.hpp"

namespace twinsim {
namespace {

// One GPU's routed-expert weight elements at TP 2: 32 layers x 8 experts x (gate, up, down)
// x 4096 x 14336 / 2.
constexpr std::int64_t kExpertElementsPerGpu = 32LL * 8 * 3 * 4096 * 7168;  // 22,548,578,304

Scenario mixtral(const std::string& experts_line, std::int64_t batch = 32, std::int64_t prompt = 128) {
  Scenario s = test::serving_scenario("mixtral-8x7b", "dgx-h100", 2, 2, 1, batch, prompt, 128, "fp8", "fp8");
  if (experts_line.empty()) return s;
  const std::string text =
      "model: mixtral-8x7b\ncluster: {preset: dgx-h100, gpus_per_node: 2, nodes: 1}\n"
      "inference: {prompt_len: " +
      std::to_string(prompt) + ", output_len: 128, batch: " + std::to_string(batch) +
      ", weight_dtype: fp8, kv_dtype: fp8, " + experts_line + "}\nplan: {tp: 2, pp: 1}\nstack: none\n";
  return load_scenario_text(text);
}

const LayerOp& op_named(const std::vector<LayerOp>& ops, const char* name) {
  for (const LayerOp& op : ops)
    if (op.name == name) return op;
  throw std::runtime_error(std::string("no op ") + name);
}

TEST(ExpertWeightDtype, SixteenBitExpertsAddOneBytePerExpertWeight) {
  const Scenario fp8 = mixtral("");
  const Scenario fp16 = mixtral("expert_weight_dtype: fp16");
  EXPECT_EQ(fp16.inference->experts_dtype(), Dtype::fp16);
  EXPECT_EQ(fp8.inference->experts_dtype(), Dtype::fp8);  // unset: weight_dtype
  const std::int64_t w8 = inference_gpu_weight_bytes(fp8.model, fp8.plan, *fp8.inference, 0);
  const std::int64_t w16 = inference_gpu_weight_bytes(fp16.model, fp16.plan, *fp16.inference, 0);
  EXPECT_EQ(stage_params(fp16.model, fp16.plan, 0).expert_matrices, kExpertElementsPerGpu);
  EXPECT_EQ(w16 - w8, kExpertElementsPerGpu);  // 2 bytes an expert weight instead of 1
}

TEST(ExpertWeightDtype, DecodeReadsSixteenBitExpertsAndEightBitAttention) {
  const Scenario fp8 = mixtral("");
  const Scenario fp16 = mixtral("expert_weight_dtype: fp16");
  const IterationShape step = decode_shape(32, 1000);  // 64 routed tokens touch all 8 experts
  const auto ops8 = build_iteration_layer_ops(fp8.model, 0, fp8.plan, *fp8.inference, step);
  const auto ops16 = build_iteration_layer_ops(fp16.model, 0, fp16.plan, *fp16.inference, step);
  // gate+up of 8 experts: 8 x 4096 x (2 x 7168) elements, 2 bytes each; down: 8 x 7168 x 4096
  EXPECT_EQ(op_named(ops16, "moe.experts.gate_up").weight_bytes, 8LL * 4096 * 14336 * 2);
  EXPECT_EQ(op_named(ops8, "moe.experts.gate_up").weight_bytes, 8LL * 4096 * 14336);
  EXPECT_EQ(op_named(ops16, "moe.experts.down").weight_bytes, 8LL * 7168 * 4096 * 2);
  // Q, K, V of this GPU's 16 query and 4 KV heads stay fp8: 4096 x (2048 + 2 x 512) bytes
  EXPECT_EQ(op_named(ops16, "attn.qkv").weight_bytes, 4096LL * 3072);
  EXPECT_EQ(op_named(ops16, "attn.qkv").weight_bytes, op_named(ops8, "attn.qkv").weight_bytes);
  EXPECT_TRUE(routed_expert_gemm("moe.experts.gate_up"));
  EXPECT_TRUE(routed_expert_gemm("moe.experts.down"));
  EXPECT_FALSE(routed_expert_gemm("moe.shared.gate_up"));
  EXPECT_FALSE(routed_expert_gemm("mlp.gate_up"));
}

// A long prefill runs the experts' GEMMs math-bound: the fused grouped curve is a fraction of
// the math type's peak, so 16-bit experts take the fp8 peak over the fp16 peak as long (H100:
// 1979 / 989 TFLOP/s) times the 8-bit over the 16-bit curve at their rows (h100-sxm.yaml: 8,192
// tokens x top 2 / 8 experts = 2,048 rows, halfway in log rows between the points at 1,024 and
// 4,096, linear in efficiency: (0.5452 + 0.6016) / 2 against (0.764 + 0.727) / 2); attention's
// GEMMs the same.
TEST(ExpertWeightDtype, PrefillExpertsRunAtTheSixteenBitPeak) {
  Scenario fp8 = mixtral("", 1, 8192);
  Scenario fp16 = mixtral("expert_weight_dtype: fp16", 1, 8192);
  for (Scenario* s : {&fp8, &fp16}) s->cluster.gpu.power_limited_gemm.reset();  // the curves' clock for both
  const IterationShape prefill = prefill_shape(1, 8192);
  const auto time_of = [&](const Scenario& s, const std::string& name) {
    for (const PassOpTime& op : ServingCostModel(s).op_times(prefill))
      if (op.name == name) return op.time_s;
    return 0.0;
  };
  const double launch = fp8.cluster.gpu.kernel_launch_s;
  const double ratio =
      (time_of(fp16, "moe.experts.gate_up.fwd") - launch) / (time_of(fp8, "moe.experts.gate_up.fwd") - launch);
  EXPECT_NEAR(ratio, 1979.0 / 989.0 * ((0.5452 + 0.6016) / 2) / ((0.764 + 0.727) / 2), 1e-9);
  EXPECT_DOUBLE_EQ(time_of(fp16, "attn.qkv.fwd"), time_of(fp8, "attn.qkv.fwd"));
}

TEST(ExpertWeightDtype, RefusedOnADenseModelAndInAFormatTheGpuLacks) {
  const auto refusal = [](const std::string& text) {
    try {
      load_scenario_text(text);
    } catch (const ScenarioError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const std::string dense = refusal(
      "model: llama2-7b\ncluster: {preset: dgx-h100, gpus_per_node: 1, nodes: 1}\n"
      "inference: {prompt_len: 128, weight_dtype: fp8, expert_weight_dtype: fp16}\nplan: {tp: 1}\nstack: none\n");
  EXPECT_NE(dense.find("inference.expert_weight_dtype"), std::string::npos) << dense;
  EXPECT_NE(dense.find("routed experts"), std::string::npos) << dense;
  const std::string fp4 = refusal(
      "model: mixtral-8x7b\ncluster: {preset: dgx-h100, gpus_per_node: 2, nodes: 1}\n"
      "inference: {prompt_len: 128, weight_dtype: fp8, expert_weight_dtype: nvfp4}\nplan: {tp: 2}\nstack: none\n");
  EXPECT_NE(fp4.find("inference.expert_weight_dtype"), std::string::npos) << fp4;
}

}  // namespace
}  // namespace twinsim
