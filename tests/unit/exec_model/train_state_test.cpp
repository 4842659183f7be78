// The up-front memory estimate against what the allocator actually hands out, and the
// trainer's checkpoint state: a run restored from it continues bit-identically.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <memory>

#include "exec/cpu/tracked_allocator.hpp"
#include "exec/model/tensor.hpp"
#include "exec/runtime/backend.hpp"
#include "exec/runtime/data.hpp"
#include "exec/train/memory_estimate.hpp"
#include "exec/train/trainer.hpp"
#include "exec/train/zero.hpp"
#include "kernels/cpu/gemm.hpp"
#include "models/lora.hpp"
#include "models/optimizer_state.hpp"
#include "scenario/load.hpp"
#include "tests/unit/exec_model/solo_communicator.hpp"
#include "tests/unit/exec_model/tiny_runs.hpp"

namespace twinsim::exec {
namespace {

using test::AllocatorScope;
using test::tiny_gpt_run;

TEST(MemoryEstimate, TinyGptFp32AdamIs16BytesPerParameter) {
  // tiny-gpt has 3,356,160 parameters (tests/exec_mpi/check_measured.cmake); fp32 Adam
  // without ZeRO keeps 4 B weight + 4 B grad + 2 x 4 B moments per parameter
  const StateEstimate e = estimate_training_state(tiny_gpt_run(0, Dtype::fp32, Optimizer::adam));
  EXPECT_EQ(e.params, 3356160);
  EXPECT_EQ(e.total_bytes(), 16 * 3356160);
}

// The GEMM's fp32 workspace, which every model holds as `buffers` (exec/model/gemm_workspace.hpp).
const std::int64_t kWorkspaceBytes = static_cast<std::int64_t>(kernels::cpu::kGemmWorkspaceFloats * sizeof(float));

// Against the allocator's live bytes once a step's grads exist: the estimate must be what
// the trainer really allocates per category (up to the 64-byte rounding of each tensor).
void expect_estimate_matches_allocations(int zero, Dtype precision, Optimizer optimizer) {
  AllocatorScope scope;
  test::SoloCommunicator world;
  const TrainConfig c = tiny_gpt_run(zero, precision, optimizer);
  ProcessGroups groups(world, c.plan);
  SyntheticTokens data(c.seed, static_cast<int>(c.model.vocab));
  Trainer trainer(c, groups, data);
  const StateEstimate e = estimate_training_state(c);
  const MemoryStats& m = scope.allocator.stats();
  const std::int64_t slack = 64 * 64;  // < 64 tensors, each rounded up by < 64 bytes
  EXPECT_NEAR(m.current_of(MemCategory::params), e.params_bytes, slack);
  EXPECT_NEAR(m.current_of(MemCategory::optimizer), e.optimizer_bytes, slack);
  // grads: all of them exist between the backward and the update, where step() ends;
  // from ZeRO 2 on only the shard (the unsharded buckets were buffers, freed by then)
  trainer.step();
  EXPECT_NEAR(m.current_of(MemCategory::grads), e.grads_bytes, slack);
  EXPECT_EQ(m.current_of(MemCategory::buffers), kWorkspaceBytes);
}

TEST(MemoryEstimate, MatchesAllocationsZero0Fp32Adam) { expect_estimate_matches_allocations(0, Dtype::fp32, Optimizer::adam); }
TEST(MemoryEstimate, MatchesAllocationsZero2Bf16Adam) { expect_estimate_matches_allocations(2, Dtype::bf16, Optimizer::adam); }
TEST(MemoryEstimate, MatchesAllocationsZero3Fp16Sgd) { expect_estimate_matches_allocations(3, Dtype::fp16, Optimizer::sgd); }

// LoRA: the optimizer keeps states for the adapters alone (zero.cpp's optimizer_spans), as many
// bytes a parameter as the simulator counts (models/optimizer_state.hpp). tiny-llama (4 layers,
// hidden 256, q 256 and k, v 128 columns, FFN 688) with rank-8 adapters on all seven linear
// layers: 8 x ((256 + 256) x 2 + (256 + 128) x 2 + (256 + 688) x 3) = 36,992 a layer, 147,968 in
// all, by hand; bf16 training keeps an fp32 master, m and v of each, 12 bytes: 1,775,616.
TEST(MemoryEstimate, LoraKeepsOptimizerStatesForTheAdaptersAlone) {
  AllocatorScope scope;
  test::SoloCommunicator world;
  TrainConfig c = tiny_gpt_run(0, Dtype::bf16, Optimizer::adam);
  c.model = catalog_model("tiny-llama");
  LoraSpec lora;
  lora.rank = 8;
  for (LoraModule module : kLoraModules) lora.modules |= 1u << static_cast<int>(module);
  c.training.lora = lora;
  const std::int64_t adapters = 147968, bytes = 12 * adapters;
  // the simulator's count: its trainable parameters (models/lora.hpp) times the shared bytes
  EXPECT_EQ(lora_layer_params(c.model, c.plan, lora) * c.model.layers, adapters);
  EXPECT_EQ(optimizer_bytes_per_param(c.training.precision, c.training.optimizer) * adapters, bytes);
  EXPECT_EQ(estimate_training_state(c).optimizer_bytes, bytes);
  const std::int64_t before = scope.allocator.stats().current_of(MemCategory::optimizer);
  ProcessGroups groups(world, c.plan);
  SyntheticTokens data(c.seed, static_cast<int>(c.model.vocab));
  Trainer trainer(c, groups, data);
  const std::int64_t slack = 64 * 64;  // < 64 tensors, each rounded up by < 64 bytes
  EXPECT_NEAR(scope.allocator.stats().current_of(MemCategory::optimizer) - before, bytes, slack);
  // the compact states step and write back only the adapters (bf16 masters, rounded): the
  // base bit for bit as it started, every adapter moved, the loss finite
  const std::map<std::string, std::vector<float>> before_steps = trainer.parameters();
  trainer.step();
  EXPECT_TRUE(std::isfinite(trainer.step().loss));
  int adapters_moved = 0;
  for (const auto& [name, after] : trainer.parameters()) {
    const bool adapter = name.ends_with(".lora_a") || name.ends_with(".lora_b");
    if (adapter) adapters_moved += after != before_steps.at(name) ? 1 : 0;
    else EXPECT_EQ(after, before_steps.at(name)) << name;
  }
  EXPECT_EQ(adapters_moved, 2 * 7 * 4);  // A and B of 7 modules in 4 layers
}

// LoRA's gradients: the executor keeps a gradient buffer for the adapters alone (weights.hpp
// flat_layout: the trainable prefix), as many bytes as the simulator counts (models/
// optimizer_state.hpp gradient_bytes): tiny-llama's 147,968 adapter parameters (by hand above)
// in bf16, 295,936 bytes, on one rank with ZeRO 0 and 2.
// Over DP 2 the estimate (which the allocations match: MemoryEstimate.MatchesAllocations*)
// keeps 295,936 through ZeRO 1 and half, 147,968, from ZeRO 2 on.
TrainConfig tiny_llama_lora_run(int zero, int dp) {
  TrainConfig c = tiny_gpt_run(zero, Dtype::bf16, Optimizer::adam);
  c.model = catalog_model("tiny-llama");
  c.plan.dp = dp;
  LoraSpec lora;
  lora.rank = 8;
  for (LoraModule module : kLoraModules) lora.modules |= 1u << static_cast<int>(module);
  c.training.lora = lora;
  return c;
}

TEST(MemoryEstimate, LoraAllocatesGradientsForTheAdaptersAlone) {
  const std::int64_t adapters = 147968;
  for (int zero : {0, 2}) {
    AllocatorScope scope;
    test::SoloCommunicator world;
    const TrainConfig c = tiny_llama_lora_run(zero, 1);
    const std::int64_t bytes = gradient_bytes(adapters, 2, c.plan.shards_grads(), c.plan.dp);
    EXPECT_EQ(bytes, 295936);
    EXPECT_EQ(estimate_training_state(c).grads_bytes, bytes) << "zero " << zero;
    ProcessGroups groups(world, c.plan);
    SyntheticTokens data(c.seed, static_cast<int>(c.model.vocab));
    Trainer trainer(c, groups, data);
    trainer.step();                      // the grads exist whole between the backward and the update
    const std::int64_t slack = 64 * 64;  // < 64 tensors, each rounded up by < 64 bytes
    EXPECT_NEAR(scope.allocator.stats().current_of(MemCategory::grads), bytes, slack) << "zero " << zero;
  }
  for (int zero : {0, 1, 2})
    EXPECT_EQ(estimate_training_state(tiny_llama_lora_run(zero, 2)).grads_bytes, zero >= 2 ? 147968 : 295936)
        << "zero " << zero;
}

// ZeRO 2/3's unsharded grads and gathered parameters are communication buckets: at the
// step's peak one bucket of grads (ZeRO 2) and, ZeRO 3, the gathered bucket in use
// (tiny-gpt is far below Megatron's 40M-parameter bucket: the whole model is one).
std::int64_t peak_buffers(int zero, std::int64_t bucket_elements, std::vector<float>* losses = nullptr,
                          int plan_bucket_size = 0) {
  AllocatorScope scope;
  test::SoloCommunicator world;
  TrainConfig c = tiny_gpt_run(zero, Dtype::fp32, Optimizer::adam);
  c.bucket_elements = bucket_elements;
  c.plan.dp_bucket_size = plan_bucket_size;
  ProcessGroups groups(world, c.plan);
  SyntheticTokens data(c.seed, static_cast<int>(c.model.vocab));
  Trainer trainer(c, groups, data);
  scope.allocator.reset_peaks();
  for (int i = 0; i < 2; ++i) {
    const float loss = trainer.step().loss;
    if (losses) losses->push_back(loss);
  }
  // all freed by the update but the GEMM workspace, which the model keeps
  EXPECT_EQ(scope.allocator.stats().current_of(MemCategory::buffers), kWorkspaceBytes);
  return scope.allocator.stats().at_total_peak_of(MemCategory::buffers) - kWorkspaceBytes;
}

TEST(ZeroBuckets, OneBucketOfGradsAndOneOfParametersAreBuffers) {
  const std::int64_t p = estimate_training_state(tiny_gpt_run(0, Dtype::fp32, Optimizer::adam)).params;
  EXPECT_EQ(peak_buffers(0, -1), 0);
  EXPECT_EQ(peak_buffers(1, -1), 0);
  EXPECT_EQ(peak_buffers(2, -1), 4 * p);
  EXPECT_EQ(peak_buffers(3, -1), 2 * 4 * p);
}

// Buckets of one block each (a bucket closes once it reaches its size): the same
// training, with less gathered and unsharded at the peak: under ZeRO 3 the last layer's
// bucket in use, the next layer's prefetched and the last layer's grads.
TEST(ZeroBuckets, SmallerBucketsTrainTheSameWithLess) {
  std::vector<float> whole, per_block;
  const std::int64_t one_bucket = peak_buffers(3, -1, &whole);
  const std::int64_t small = peak_buffers(3, 1, &per_block);
  EXPECT_EQ(per_block, whole);
  const std::int64_t layer = 12 * 256 * 256 + 13 * 256;  // tiny-gpt's layer block
  EXPECT_EQ(small, 3 * 4 * layer);
  EXPECT_LT(small, one_bucket);
}

// plan.dp_bucket_size sets the executor's bucket as it sets the simulator's (models/plan.hpp
// dp_bucket_params): one parameter closes a bucket at every block, as the hook above does.
TEST(ZeroBuckets, ThePlansBucketSizeSetsTheBuckets) {
  const std::int64_t layer = 12 * 256 * 256 + 13 * 256;  // tiny-gpt's layer block
  EXPECT_EQ(peak_buffers(3, -1, nullptr, 1), 3 * 4 * layer);
  EXPECT_EQ(peak_buffers(3, -1, nullptr, 1), peak_buffers(3, 1));
}

// Losses of steps [from, to) of a trainer.
std::vector<float> run_steps(Trainer& t, int n) {
  std::vector<float> out;
  for (int i = 0; i < n; ++i) out.push_back(t.step().loss);
  return out;
}

void expect_resume_is_bit_identical(int zero, Dtype precision) {
  AllocatorScope scope;
  test::SoloCommunicator world;
  TrainConfig c = tiny_gpt_run(zero, precision, Optimizer::adam);
  c.model.layers = 2;
  ProcessGroups groups(world, c.plan);
  SyntheticTokens data(c.seed, static_cast<int>(c.model.vocab));
  Trainer first(c, groups, data);
  run_steps(first, 2);
  const TensorFile saved = first.save_state();
  const std::vector<float> uninterrupted = run_steps(first, 2);

  Trainer resumed(c, groups, data);  // freshly initialised, then restored
  resumed.load_state(saved);
  EXPECT_EQ(resumed.steps_done(), 2);
  const std::vector<float> after_resume = run_steps(resumed, 2);
  ASSERT_EQ(after_resume.size(), uninterrupted.size());
  for (std::size_t i = 0; i < after_resume.size(); ++i) EXPECT_EQ(after_resume[i], uninterrupted[i]) << "step " << 2 + i;
  // and the restore did something: an unrestored trainer starts from another loss
  Trainer fresh(c, groups, data);
  EXPECT_NE(run_steps(fresh, 1)[0], uninterrupted[0]);
}

TEST(TrainState, ResumeIsBitIdenticalFp32) { expect_resume_is_bit_identical(0, Dtype::fp32); }
TEST(TrainState, ResumeIsBitIdenticalFp16Zero3) { expect_resume_is_bit_identical(3, Dtype::fp16); }

TEST(TrainState, RefusesAnotherJobsCheckpoint) {
  AllocatorScope scope;
  test::SoloCommunicator world;
  TrainConfig c = tiny_gpt_run(0, Dtype::fp32, Optimizer::adam);
  c.model.layers = 2;
  ProcessGroups groups(world, c.plan);
  SyntheticTokens data(c.seed, static_cast<int>(c.model.vocab));
  Trainer a(c, groups, data);
  TensorFile saved = a.save_state();
  saved.metadata()["twinsim.seed"] = "99";
  EXPECT_THROW(a.load_state(saved), CheckpointError);
}

// A checkpoint of the same job under another plan, precision or optimizer would load
// shards laid out for someone else: refused, naming what differs.
TEST(TrainState, RefusesAnotherModelPlanOrTrainingSetup) {
  AllocatorScope scope;
  test::SoloCommunicator world;
  const TrainConfig base = tiny_gpt_run(0, Dtype::fp32, Optimizer::adam);
  ProcessGroups groups(world, base.plan);
  SyntheticTokens data(base.seed, static_cast<int>(base.model.vocab));
  TensorFile saved;
  {
    Trainer a(base, groups, data);
    saved = a.save_state();
  }
  auto refused = [&](TrainConfig c, const std::string& key) {
    Trainer b(c, groups, data);
    try {
      b.load_state(saved);
    } catch (const CheckpointError& e) {
      return std::string(e.what()).find(key) != std::string::npos;
    }
    return false;
  };
  TrainConfig zero1 = base;
  zero1.plan.zero = 1;
  EXPECT_TRUE(refused(zero1, "twinsim.plan"));
  EXPECT_TRUE(refused(tiny_gpt_run(0, Dtype::bf16, Optimizer::adam), "twinsim.training"));
  EXPECT_TRUE(refused(tiny_gpt_run(0, Dtype::fp32, Optimizer::sgd), "twinsim.training"));
  TrainConfig wider = base;
  wider.model.ffn_hidden = 2 * base.model.ffn_hidden;
  EXPECT_TRUE(refused(wider, "twinsim.model"));
  // the same setup loads, and an older checkpoint without the keys still does
  Trainer same(base, groups, data);
  EXPECT_NO_THROW(same.load_state(saved));
  for (const char* key : {"twinsim.model", "twinsim.plan", "twinsim.training"}) saved.metadata().erase(key);
  EXPECT_NO_THROW(same.load_state(saved));
}

}  // namespace
}  // namespace twinsim::exec

namespace twinsim::exec {
namespace {

// The optimizer names the first parameter whose gradient holds a NaN or an Inf (the
// trainer stops the step before the update with it, fp32 and bf16), "" when all are finite.
TEST(NonFiniteGrad, NamesTheParameter) {
  AllocatorScope scope;
  test::SoloCommunicator dp, tp;
  const TrainConfig c = tiny_gpt_run(1, Dtype::fp32, Optimizer::adam);
  ParamSpec w{"layer0.mlp.fc1.weight", 4, 8}, b{"layer0.mlp.fc1.bias", 1, 8};
  b.init = Init::zeros;
  ParamBlock block("layer0", {w, b}, 1, 0);
  ShardedOptimizer optimizer(c, {&block}, dp, tp, false, nullptr);
  optimizer.begin_step();
  EXPECT_EQ(optimizer.first_non_finite_grad(), "");
  // one value written into the device's gradients, as a kernel would
  const auto set = [](float* at, float value) { current_backend().copy_to_device(at, &value, sizeof value); };
  set(block.grads.as<float>() + 32 + 3, std::numeric_limits<float>::infinity());  // the bias's fourth value
  EXPECT_EQ(optimizer.first_non_finite_grad(), "layer0.mlp.fc1.bias");
  set(block.grads.as<float>() + 5, std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(optimizer.first_non_finite_grad(), "layer0.mlp.fc1.weight");
}

}  // namespace
}  // namespace twinsim::exec
