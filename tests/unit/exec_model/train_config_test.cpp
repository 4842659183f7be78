// The executor's plan check (exec/train/train_config.cpp validate, which the Trainer runs first):
// what it does not run is refused with a ScenarioError naming the key, the value and the rule,
// in-process on one rank (no mpirun): plan.schedule dualpipe and interleaved (it runs gpipe and
// 1f1b), and Megatron-core's precision-aware optimizer keys (it keeps Adam's states in fp32).
#include <gtest/gtest.h>

#include <string>

#include "exec/runtime/data.hpp"
#include "exec/train/train_config.hpp"
#include "exec/train/trainer.hpp"
#include "scenario/errors.hpp"
#include "tests/unit/exec_model/solo_communicator.hpp"
#include "tests/unit/exec_model/tiny_runs.hpp"

namespace twinsim::exec {
namespace {

// tiny-gpt on two pipeline stages, 8 micro-batches of one sequence: a plan the executor runs
// under gpipe and 1f1b, and one DualPipe would take (an even pp, an even count >= 2 x pp).
TrainConfig two_stage_tiny_gpt() {
  TrainConfig c = test::tiny_gpt_run(1, Dtype::bf16, Optimizer::adam);
  c.plan.pp = 2;
  c.training.global_batch = 8;
  return c;
}

// validate(c) throws a ScenarioError with this key and value, its rule containing `rule_part`.
void expect_executor_refuses(const TrainConfig& c, const std::string& key, const std::string& value,
                             const std::string& rule_part) {
  try {
    validate(c);
    ADD_FAILURE() << key << "=" << value << " was not refused";
  } catch (const ScenarioError& e) {
    EXPECT_EQ(e.key, key);
    EXPECT_EQ(e.value, value);
    EXPECT_NE(e.rule.find(rule_part), std::string::npos) << e.rule;
    EXPECT_EQ(std::string(e.what()), key + "=" + value + " " + e.rule);
  }
}

TEST(ExecutorPlanCheck, RefusesDualPipeAndInterleavedNamingTheSchedule) {
  TrainConfig c = two_stage_tiny_gpt();
  for (const Schedule run : {Schedule::gpipe, Schedule::one_f_one_b}) {
    c.plan.schedule = run;
    EXPECT_NO_THROW(validate(c)) << to_string(run);  // the same plan runs under these
  }
  c.plan.schedule = Schedule::dualpipe;
  expect_executor_refuses(c, "plan.schedule", "dualpipe", "gpipe and 1f1b");
  c.plan.schedule = Schedule::interleaved;
  c.plan.virtual_stages = 2;
  expect_executor_refuses(c, "plan.schedule", "interleaved", "gpipe and 1f1b");
}

TEST(ExecutorPlanCheck, RefusesThePrecisionAwareOptimizerNamingTheKeySet) {
  EXPECT_NO_THROW(validate(two_stage_tiny_gpt()));  // every state in fp32: runs
  TrainConfig m = two_stage_tiny_gpt();
  m.plan.exp_avg_dtype = Dtype::bf16;  // DeepSeek-V3's bf16 moments
  expect_executor_refuses(m, "plan.exp_avg_dtype", "bf16", "fp32");
  TrainConfig v = two_stage_tiny_gpt();
  v.plan.exp_avg_sq_dtype = Dtype::fp8;
  expect_executor_refuses(v, "plan.exp_avg_sq_dtype", "fp8", "fp32");
  TrainConfig masters = two_stage_tiny_gpt();
  masters.plan.main_params_dtype = Dtype::fp16;
  expect_executor_refuses(masters, "plan.main_params_dtype", "fp16", "fp32");
  masters.plan.exp_avg_sq_dtype = Dtype::bf16;  // two set: the first in key order is named
  expect_executor_refuses(masters, "plan.exp_avg_sq_dtype", "bf16", "fp32");
}

// The run path: the Trainer (what `twinsim run` builds on each rank) checks the plan before it
// allocates the model, so one rank refuses with the same typed error.
TEST(ExecutorPlanCheck, TheTrainerRefusesBeforeBuildingTheModel) {
  TrainConfig c = two_stage_tiny_gpt();
  c.plan.pp = 1;
  c.plan.main_params_dtype = Dtype::fp16;
  const test::AllocatorScope memory;
  test::SoloCommunicator world;
  ProcessGroups groups(world, c.plan);
  SyntheticTokens data(c.seed, static_cast<int>(c.model.vocab));
  try {
    Trainer trainer(c, groups, data);
    ADD_FAILURE() << "plan.main_params_dtype=fp16 was not refused";
  } catch (const ScenarioError& e) {
    EXPECT_EQ(e.key, "plan.main_params_dtype");
    EXPECT_EQ(e.value, "fp16");
  }
  EXPECT_EQ(memory.allocator.stats().total_peak, 0);  // nothing of the model was ever allocated
}

}  // namespace
}  // namespace twinsim::exec
