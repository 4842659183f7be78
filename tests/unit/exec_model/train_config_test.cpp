// The executor's plan check (exec/train/train_config.cpp validate, which the Trainer runs first):
// what it does not run is refused with a ScenarioError naming the key, the value and the rule,
// in-process on one rank (no mpirun): plan.schedule dualpipe and interleaved (it runs gpipe and
// 1f1b), Megatron-core's precision-aware optimizer keys (it keeps Adam's states in fp32), and
// every other family of refusal (a table: the key, a refused value, an accepted control).
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

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
    EXPECT_EQ(std::string(e.what()), value.empty() ? key + ": " + e.rule : key + "=" + value + " " + e.rule);
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

// One family of refusal: `accept` turns tiny-gpt (one rank, ZeRO-1, bf16, Adam) into a plan the
// executor runs; `refuse` then changes that plan so the check refuses it, naming key and value.
struct RefusalRow {
  std::function<void(TrainConfig&)> accept, refuse;
  std::string key, value, rule_part;
};

void use_tiny_moe(TrainConfig& c, int dp) {
  c.model = catalog_model("tiny-moe");
  c.plan.dp = dp;
  c.training.global_batch = 2 * dp;
}

std::vector<RefusalRow> refusal_rows() {
  const auto none = [](TrainConfig&) {};
  const auto hybrid_sharding = [](TrainConfig& c) {  // ZeRO-3 over dp=4 as 2 replicas of 2 shards
    c.plan.dp = 4;
    c.training.global_batch = 4;
    c.plan.zero = 3;
    c.plan.dp_replicate = 2;
  };
  return {
      {none, [](TrainConfig& c) { c.plan.cp = 2; }, "plan.cp", "2", "context parallelism"},
      // EP: experts over 2 data-parallel ranks run; the same plan on a dense model does not
      {[](TrainConfig& c) {
         use_tiny_moe(c, 2);
         c.plan.ep = 2;
       },
       [](TrainConfig& c) { c.model = catalog_model("tiny-gpt"); }, "plan.ep", "2", "model.moe"},
      // tp=4: expert_tp 2 divides it, 3 does not
      {[](TrainConfig& c) {
         use_tiny_moe(c, 1);
         c.plan.tp = 4;
         c.plan.expert_tp = 2;
       },
       [](TrainConfig& c) { c.plan.expert_tp = 3; }, "plan.expert_tp", "3", "must divide plan.tp=4"},
      // tp * dp * cp = 2 ranks: ep=2 x expert_tp=1 tiles them, ep=4 does not
      {[](TrainConfig& c) {
         use_tiny_moe(c, 2);
         c.plan.ep = 2;
       },
       [](TrainConfig& c) { c.plan.ep = 4; }, "plan.ep", "4", "tp * dp * cp = 2"},
      {[](TrainConfig& c) {
         use_tiny_moe(c, 2);
         c.plan.ep = 2;
         c.plan.gradient_compression = GradCompression::int8;
       },
       [](TrainConfig& c) { c.plan.gradient_compression = GradCompression::powersgd; }, "plan.gradient_compression",
       "powersgd", "expert parallelism"},
      {none, [](TrainConfig& c) { c.plan.zero_hpz_partition_size = 2; }, "plan.zero_hpz_partition_size", "2",
       "secondary partition"},
      // hybrid sharding over dp=4 under ZeRO-3: 2 replicas run; 3 do not divide 4, nor runs ZeRO-0
      {hybrid_sharding, [](TrainConfig& c) { c.plan.dp_replicate = 3; }, "plan.dp_replicate", "3",
       "must divide plan.dp=4"},
      {hybrid_sharding, [](TrainConfig& c) { c.plan.zero = 0; }, "plan.dp_replicate", "2", "needs plan.zero 1, 2 or 3"},
      // int8 gradients under ZeRO-1 run; under ZeRO-2, or with fp16, they do not
      {[](TrainConfig& c) { c.plan.gradient_compression = GradCompression::int8; },
       [](TrainConfig& c) { c.plan.zero = 2; }, "plan.gradient_compression", "int8", "plan.zero=2"},
      {[](TrainConfig& c) { c.plan.gradient_compression = GradCompression::int8; },
       [](TrainConfig& c) { c.training.precision = Dtype::fp16; }, "plan.gradient_compression", "int8", "fp16"},
      {none, [](TrainConfig& c) { c.plan.offload_params = true; }, "plan.offload_params", "true", "optimizer only"},
      {[](TrainConfig& c) {
         c.plan.offload_optimizer = true;
         c.plan.offload_device = OffloadDevice::nvme;
       },
       [](TrainConfig& c) { c.plan.offload_optimizer = false; }, "plan.offload_device", "nvme",
       "plan.offload_optimizer=true"},
      {[](TrainConfig& c) { c.plan.offload_activations_layers = 1; },
       [](TrainConfig& c) { c.plan.recompute = Recompute::full; }, "plan.offload_activations_layers", "1",
       "plan.recompute=none"},
      {none, [](TrainConfig& c) { c.plan.zero_quantized_weights = true; }, "plan.zero_quantized_weights", "true",
       "full precision"},
      {none, [](TrainConfig& c) { c.plan.zero_quantized_gradients = true; }, "plan.zero_quantized_gradients", "true",
       "full precision"},
      {none, [](TrainConfig& c) { c.plan.fp8_attention = true; }, "plan.fp8_attention", "true", "training precision"},
      {none, [](TrainConfig& c) { c.plan.fp8_activation_input = true; }, "plan.fp8_activation_input", "true",
       "training precision"},
      {none, [](TrainConfig& c) { c.plan.fp8_moe_act_cache = true; }, "plan.fp8_moe_act_cache", "true",
       "training precision"},
      // dp=2: 4 sequences split into micro-batches of one; 3 do not
      {[](TrainConfig& c) {
         c.plan.dp = 2;
         c.training.global_batch = 4;
       },
       [](TrainConfig& c) { c.training.global_batch = 3; }, "training.global_batch", "3", "micro_batch * plan.dp"},
      {none, [](TrainConfig& c) { c.training.precision = Dtype::fp8; }, "training.precision", "fp8",
       "fp32, bf16, fp16"},
      // LoRA on one TP rank over a bf16 base runs; TP 2, an nf4 base, optimizer offload or experts do not
      {[](TrainConfig& c) { c.training.lora = LoraSpec{}; }, [](TrainConfig& c) { c.plan.tp = 2; }, "plan.tp", "2",
       "training.lora"},
      {[](TrainConfig& c) { c.training.lora = LoraSpec{}; },
       [](TrainConfig& c) { c.training.lora->base = LoraBase::nf4; }, "training.lora.base", "nf4", "bf16 or fp16"},
      {[](TrainConfig& c) { c.training.lora = LoraSpec{}; }, [](TrainConfig& c) { c.plan.offload_optimizer = true; },
       "plan.offload_optimizer", "true", "training.lora"},
      {[](TrainConfig& c) { c.training.lora = LoraSpec{}; }, [](TrainConfig& c) { use_tiny_moe(c, 1); },
       "training.lora", "", "experts (model.moe)"},
  };
}

// Each family: the accepted plan runs, the refused one throws a ScenarioError naming its key,
// value and rule, which `twinsim run` turns into exit status 2 (app/main.cpp).
TEST(ExecutorPlanCheck, EveryRefusalNamesItsKeyValueAndRule) {
  for (const RefusalRow& row : refusal_rows()) {
    SCOPED_TRACE(row.key + "=" + row.value);
    TrainConfig c = test::tiny_gpt_run(1, Dtype::bf16, Optimizer::adam);
    row.accept(c);
    EXPECT_NO_THROW(validate(c));
    row.refuse(c);
    expect_executor_refuses(c, row.key, row.value, row.rule_part);
  }
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
