// The up-front memory estimate against what the allocator actually hands out, and the
// trainer's checkpoint state: a run restored from it continues bit-identically.
#include <gtest/gtest.h>

#include "exec/model/tensor.hpp"
#include "exec/runtime/data.hpp"
#include "exec/train/memory_estimate.hpp"
#include "exec/train/trainer.hpp"
#include "scenario/load.hpp"
#include "tests/unit/exec_model/solo_communicator.hpp"

namespace twinsim::exec {
namespace {

TrainConfig tiny_gpt_run(int zero, Dtype precision, Optimizer optimizer) {
  TrainConfig c;
  c.model = catalog_model("tiny-gpt");
  c.plan.zero = zero;
  c.training.seq_len = 16;
  c.training.global_batch = 2;
  c.training.micro_batch = 1;
  c.training.precision = precision;
  c.training.optimizer = optimizer;
  return c;
}

// Installs an allocator for the model for the test's lifetime.
struct AllocatorScope {
  TrackedAllocator allocator;
  AllocatorScope() { set_model_allocator(&allocator); }
  ~AllocatorScope() { set_model_allocator(nullptr); }
};

TEST(MemoryEstimate, TinyGptFp32AdamIs16BytesPerParameter) {
  // tiny-gpt has 3,356,160 parameters (tests/exec_mpi/check_measured.cmake); fp32 Adam
  // without ZeRO keeps 4 B weight + 4 B grad + 2 x 4 B moments per parameter
  const StateEstimate e = estimate_training_state(tiny_gpt_run(0, Dtype::fp32, Optimizer::adam));
  EXPECT_EQ(e.params, 3356160);
  EXPECT_EQ(e.total_bytes(), 16 * 3356160);
}

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
  // grads: all of them exist between the backward and the update; step() ends there for
  // ZeRO 0/1, ZeRO 2 frees its full grads after the reduce-scatter, so count those back
  trainer.step();
  const std::int64_t full_grads = zero == 2 ? 4 * e.params : 0;
  EXPECT_NEAR(m.current_of(MemCategory::grads) + full_grads, e.grads_bytes, slack);
}

TEST(MemoryEstimate, MatchesAllocationsZero0Fp32Adam) { expect_estimate_matches_allocations(0, Dtype::fp32, Optimizer::adam); }
TEST(MemoryEstimate, MatchesAllocationsZero2Bf16Adam) { expect_estimate_matches_allocations(2, Dtype::bf16, Optimizer::adam); }
TEST(MemoryEstimate, MatchesAllocationsZero3Fp16Sgd) { expect_estimate_matches_allocations(3, Dtype::fp16, Optimizer::sgd); }

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

}  // namespace
}  // namespace twinsim::exec
