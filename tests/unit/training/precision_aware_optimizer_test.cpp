// Megatron-core's precision-aware optimizer (plan.exp_avg_dtype, exp_avg_sq_dtype,
// main_params_dtype; docs/scenario/ext-keys-plan.md): the optimizer's bytes per parameter in
// every combination, the same count in the memory report and the checkpoint, the step's
// memory-bound bytes, and the rules Megatron-core asserts.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "models/optimizer_state.hpp"
#include "models/param_count.hpp"
#include "scenario/errors.hpp"
#include "scenario/load.hpp"
#include "sim/goodput/checkpoint.hpp"
#include "sim/memory/memory_report.hpp"
#include "sim/memory/weights.hpp"
#include "sim/training/step_graph.hpp"

namespace twinsim {
namespace {

// An 8-GPU bf16 GPT-2 run under the distributed optimizer (ZeRO-1) of `stack`.
Scenario precision_aware_run(const std::vector<std::string>& sets = {}, const std::string& stack = "megatron-core") {
  return load_scenario_text("model: gpt2-small\ncluster: dgx-h100\nstack: " + stack +
                                "\ntraining: {seq_len: 1024, global_batch: 16, micro_batch: 1, precision: bf16, "
                                "optimizer: adam}\nplan: {tp: 1, pp: 1, dp: 8, zero: 1, recompute: none}\n",
                            sets);
}

TEST(PrecisionAwareOptimizer, BytesPerParameterOfEachCombination) {
  // Hand table, element bytes: fp32 4, fp16 2, bf16 2, fp8 1 (Megatron maps fp8 to uint8).
  struct Row {
    Dtype exp_avg, exp_avg_sq, main_params;
    std::int64_t mixed, fp32_training;  // master + m + v under bf16; m + v under fp32
  };
  const Row rows[] = {
      {Dtype::fp32, Dtype::fp32, Dtype::fp32, 4 + 4 + 4, 8},  // the plain optimizer: ZeRO paper's 12
      {Dtype::bf16, Dtype::bf16, Dtype::fp32, 4 + 2 + 2, 4},  // DeepSeek-V3 §3.3.3, Bridge's recipe
      {Dtype::fp16, Dtype::fp16, Dtype::fp32, 4 + 2 + 2, 4}, {Dtype::fp8, Dtype::fp8, Dtype::fp32, 4 + 1 + 1, 2},
      {Dtype::fp8, Dtype::bf16, Dtype::fp32, 4 + 1 + 2, 3},  {Dtype::bf16, Dtype::fp8, Dtype::fp32, 4 + 2 + 1, 3},
      {Dtype::fp32, Dtype::fp32, Dtype::fp16, 2 + 4 + 4, 8}, {Dtype::bf16, Dtype::bf16, Dtype::fp16, 2 + 2 + 2, 4},
      {Dtype::fp8, Dtype::fp8, Dtype::fp16, 2 + 1 + 1, 2},   {Dtype::fp32, Dtype::fp8, Dtype::fp16, 2 + 4 + 1, 5},
  };
  for (const Row& r : rows) {
    const OptimizerStateDtypes states{r.exp_avg, r.exp_avg_sq, r.main_params};
    EXPECT_EQ(training_bytes_per_param(Dtype::bf16, Optimizer::adam, states).optimizer, r.mixed);
    EXPECT_EQ(training_bytes_per_param(Dtype::fp8, Optimizer::adam, states).optimizer, r.mixed);
    EXPECT_EQ(optimizer_bytes_per_param(Dtype::fp32, Optimizer::adam, states), r.fp32_training);
    // the weights and gradients do not move
    EXPECT_EQ(training_bytes_per_param(Dtype::bf16, Optimizer::adam, states).params, 2);
    EXPECT_EQ(training_bytes_per_param(Dtype::bf16, Optimizer::adam, states).grads, 2);
  }
}

TEST(PrecisionAwareOptimizer, MemoryAndCheckpointCountTheSameBytes) {
  const Scenario plain = precision_aware_run();
  const Scenario bf16 = precision_aware_run({"plan.exp_avg_dtype=bf16", "plan.exp_avg_sq_dtype=bf16"});
  // ZeRO-1 over 8: each GPU keeps 1/8 of the 12 (plain) or 8 (bf16 moments) bytes a parameter
  const std::int64_t plain_opt = predict_memory(plain).breakdown.optimizer;
  const std::int64_t bf16_opt = predict_memory(bf16).breakdown.optimizer;
  ASSERT_GT(plain_opt, 0);
  EXPECT_NEAR(static_cast<double>(bf16_opt) / static_cast<double>(plain_opt), 8.0 / 12.0, 1e-6);
  EXPECT_EQ(predict_memory(bf16).breakdown.params, predict_memory(plain).breakdown.params);
  // the checkpoint: weights 2 + states 12 (plain) or 2 + 8 a parameter, every parameter once
  const double params = static_cast<double>(count_params(plain.model).total);
  EXPECT_DOUBLE_EQ(checkpoint_bytes(plain), params * 14.0);
  EXPECT_DOUBLE_EQ(checkpoint_bytes(bf16), params * 10.0);
}

TEST(PrecisionAwareOptimizer, StepMovesTheNarrowerStates) {
  Scenario s = precision_aware_run({"plan.exp_avg_dtype=bf16", "plan.exp_avg_sq_dtype=bf16"});
  const double shard = 1e6;
  // Adam reads and writes the fp32 master and the bf16 moments, 2 x (4 + 2 + 2) = 16, and reads
  // the gradient (megatron-core keeps bf16's in fp32: 4): 20 a parameter; the master's cast
  // into the bf16 weights reads 4 and writes 2
  std::vector<ComputeOp> ops = optimizer_shard_ops(s.stack, s.plan, *s.training, shard);
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_DOUBLE_EQ(ops[0].bytes, 20 * shard);
  EXPECT_DOUBLE_EQ(ops[1].bytes, 6 * shard);
  // fp16 masters too: 2 x (2 + 2 + 2) + 4 = 16; the cast reads 2 and writes 2
  s.plan.main_params_dtype = Dtype::fp16;
  ops = optimizer_shard_ops(s.stack, s.plan, *s.training, shard);
  EXPECT_DOUBLE_EQ(ops[0].bytes, 16 * shard);
  EXPECT_DOUBLE_EQ(ops[1].bytes, 4 * shard);
  // the plain optimizer: 2 x 12 + 4 = 28, and the step takes longer
  const Scenario plain = precision_aware_run();
  EXPECT_DOUBLE_EQ(optimizer_shard_ops(plain.stack, plain.plan, *plain.training, shard)[0].bytes, 28 * shard);
  EXPECT_LT(optimizer_step_hbm_bytes(precision_aware_run({"plan.exp_avg_dtype=fp8"}), 0),
            optimizer_step_hbm_bytes(plain, 0));
}

TEST(PrecisionAwareOptimizer, RefusedWhereMegatronAsserts) {
  const std::vector<std::string> bf16 = {"plan.exp_avg_dtype=bf16"};
  auto with = [&](std::vector<std::string> more) {
    more.insert(more.begin(), bf16.begin(), bf16.end());
    return more;
  };
  EXPECT_NO_THROW(precision_aware_run(bf16));
  EXPECT_NO_THROW(precision_aware_run({"plan.main_params_dtype=fp16"}));
  EXPECT_THROW(precision_aware_run({"plan.main_params_dtype=bf16"}), ScenarioError);  // fp32 or fp16 only
  EXPECT_THROW(precision_aware_run({"plan.exp_avg_dtype=int8"}), ScenarioError);
  // get_megatron_optimizer: "only supported with distributed optimizer"
  EXPECT_THROW(precision_aware_run(with({"plan.zero=0"})), ScenarioError);
  EXPECT_NO_THROW(precision_aware_run({"plan.zero=0"}));
  // OptimizerConfig: Adam only
  EXPECT_THROW(precision_aware_run(with({"training.optimizer=sgd"})), ScenarioError);
  EXPECT_NO_THROW(precision_aware_run({"training.optimizer=sgd"}));
  // no fp32-training master; ZeRO-Offload; a stack other than Megatron-core's
  EXPECT_THROW(precision_aware_run(with({"training.precision=fp32"})), ScenarioError);
  EXPECT_THROW(precision_aware_run(bf16, "deepspeed"), ScenarioError);
  EXPECT_NO_THROW(precision_aware_run({}, "deepspeed"));
  EXPECT_NO_THROW(precision_aware_run(bf16, "none"));
  // an inference run has no optimizer
  const std::string serving =
      "model: gpt2-small\ncluster: dgx-h100\ninference: {prompt_len: 128, output_len: 128, "
      "batch: 8}\nplan: {tp: 1}\n";
  EXPECT_NO_THROW(load_scenario_text(serving));
  EXPECT_THROW(load_scenario_text(serving, {"plan.main_params_dtype=fp16"}),
               ScenarioError);  // the device alone: DeepSeek-V3's own framework
}

}  // namespace
}  // namespace twinsim
