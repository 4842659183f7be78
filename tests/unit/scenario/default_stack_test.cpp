// The stack a scenario that names none gets (scenario/default_stack.hpp): each rule by the plan
// or workload key that selects it, and the plan that stays on the previous rule beside it.
#include <gtest/gtest.h>

#include <string>

#include "scenario/default_stack.hpp"
#include "scenario/load.hpp"

namespace twinsim {
namespace {

// Llama-3-8B training on 8 nodes of 8 H100s with no `stack:`, its plan as given (`plan: {...}`).
Scenario training(const std::string& plan) {
  return load_scenario_text(
      "model: llama3-8b\ncluster: dgx-h100\n"
      "training: {seq_len: 4096, global_batch: 512, micro_batch: 1, precision: bf16}\n"
      "plan: " +
      plan + "\n");
}

// Llama-3-70B serving on one B200 with no `stack:`, its weights in `dtype`.
Scenario serving(const std::string& dtype) {
  return load_scenario_text(
      "model: llama3-70b\ncluster: {preset: dgx-b200, gpus_per_node: 1, nodes: 1}\n"
      "inference: {prompt_len: 128, output_len: 128, batch: 8, kv_dtype: fp8, weight_dtype: " +
      dtype + "}\nplan: {tp: 1, pp: 1}\n");
}

TEST(DefaultStack, MegatronCoreAndDeepSpeedAsBefore) {
  EXPECT_EQ(training("{tp: 8, pp: 2, dp: 4, zero: 1}").stack.name, "megatron-core");
  EXPECT_EQ(training("{tp: 2, pp: 1, dp: 32, zero: 1, tp_comm_overlap: true}").stack.name, "megatron-core");
  EXPECT_EQ(training("{tp: 1, pp: 1, dp: 64, zero: 3}").stack.name, "deepspeed");  // plain ZeRO-3: either
  EXPECT_EQ(training("{tp: 8, pp: 1, dp: 8, zero: 2, sequence_parallel: true}").stack.name, "deepspeed");  // AutoTP
  EXPECT_TRUE(training("{tp: 1, pp: 1, dp: 64, zero: 3}").stack_is_default);
}

TEST(DefaultStack, ShardingWithAPipelineOrContextParallelismIsTorchtitan) {
  // DeepSpeed's pipeline refuses ZeRO-2/3 and it has no ring attention: FSDP2's composition,
  // compiled (the eager stack's kernel census is one GPU's dense layers in bf16)
  EXPECT_EQ(training("{tp: 8, pp: 4, dp: 2, zero: 3, sequence_parallel: true}").stack.name, "torchtitan-compile");
  EXPECT_EQ(training("{tp: 1, pp: 1, cp: 4, dp: 16, zero: 3}").stack.name, "torchtitan-compile");
  EXPECT_EQ(training("{tp: 1, pp: 2, dp: 32, zero: 2}").stack.name, "torchtitan-compile");
  // ZeRO-1 (Megatron's distributed optimizer) with the same pipeline stays Megatron-Core's
  EXPECT_EQ(training("{tp: 8, pp: 4, dp: 2, zero: 1, sequence_parallel: true}").stack.name, "megatron-core");
  // what only DeepSpeed runs wins over the pipeline: ZeRO-Offload
  EXPECT_EQ(training("{tp: 1, pp: 2, dp: 32, zero: 2, offload_optimizer: true}").stack.name, "deepspeed");
}

TEST(DefaultStack, ParametersShardedBesideTensorParallelismAreTorchtitan) {
  // DeepSpeed's AutoTP training combines tensor parallelism with ZeRO stages 0-2 only; FSDP2
  // over DTensor TP is PyTorch's 2-D parallelism
  EXPECT_EQ(training("{tp: 8, pp: 1, dp: 8, zero: 3, sequence_parallel: true}").stack.name, "torchtitan-compile");
  EXPECT_EQ(training("{tp: 2, pp: 1, dp: 32, zero: 3}").stack.name, "torchtitan-compile");
  // ZeRO-2 beside TP (AutoTP's) and ZeRO-3 alone stay DeepSpeed's; ZeRO-3 offload too
  EXPECT_EQ(training("{tp: 2, pp: 1, dp: 32, zero: 2}").stack.name, "deepspeed");
  EXPECT_EQ(training("{tp: 1, pp: 1, dp: 64, zero: 3}").stack.name, "deepspeed");
  EXPECT_EQ(training("{tp: 2, pp: 1, dp: 32, zero: 3, offload_optimizer: true}").stack.name, "deepspeed");
  // the search's per-plan default is the same rule
  PlanKnobs plan;
  plan.tp = 8;
  plan.dp = 8;
  plan.zero = 3;
  EXPECT_EQ(default_training_stack_name(plan), "torchtitan-compile");
}

TEST(DefaultStack, PerOpSelectiveRecomputeIsTorchtitan) {
  EXPECT_EQ(training("{tp: 1, pp: 1, dp: 64, zero: 3, recompute: selective_op}").stack.name, "torchtitan-compile");
  EXPECT_EQ(training("{tp: 1, pp: 1, dp: 64, zero: 1, recompute: selective_op}").stack.name, "torchtitan-compile");
  EXPECT_EQ(training("{tp: 1, pp: 1, dp: 64, zero: 1, recompute: selective}").stack.name, "megatron-core");
  EXPECT_EQ(training("{tp: 2, pp: 1, dp: 32, zero: 3, recompute: selective_op}").stack.name, "torchtitan-compile");
  // fp8 training (torchao float8), which the eager stack's census refuses: loads
  const Scenario fp8 = load_scenario_text(
      "model: llama3-8b\ncluster: dgx-h100\n"
      "training: {seq_len: 4096, global_batch: 512, micro_batch: 1, precision: fp8}\n"
      "plan: {tp: 1, pp: 1, dp: 64, zero: 3, recompute: selective_op}\n");
  EXPECT_EQ(fp8.stack.name, "torchtitan-compile");
}

TEST(DefaultStack, AsyncTpUnderShardingIsCompiledTorchtitan) {
  EXPECT_EQ(training("{tp: 8, pp: 1, dp: 8, zero: 3, sequence_parallel: true, tp_comm_overlap: true}").stack.name,
            "torchtitan-compile");
}

TEST(DefaultStack, NvFp4ServingIsTensorRtLlm) {
  EXPECT_EQ(serving("nvfp4").stack.name, "trtllm-v1");
  EXPECT_EQ(serving("fp8").stack.name, "vllm-v1");
  EXPECT_EQ(serving("bf16").stack.name, "vllm-v1");
  EXPECT_TRUE(serving("nvfp4").stack_is_default);
}

TEST(DefaultStack, ANamedStackIsKept) {
  const Scenario named = load_scenario_text(
      "model: llama3-8b\ncluster: dgx-h100\nstack: deepspeed\n"
      "training: {seq_len: 4096, global_batch: 512, micro_batch: 1, precision: bf16}\n"
      "plan: {tp: 1, pp: 2, dp: 32, zero: 1}\n");
  EXPECT_EQ(named.stack.name, "deepspeed");
  EXPECT_FALSE(named.stack_is_default);
}

}  // namespace
}  // namespace twinsim
