// Communication buffers: ZeRO buckets and pipeline send/receive (sim/memory/buffers).
#include <gtest/gtest.h>

#include "sim/memory/buffers.hpp"
#include "tests/unit/memory/test_models.hpp"

namespace twinsim {
namespace {

TrainingWorkload fp32_adam() {
  TrainingWorkload t;
  t.seq_len = 2048, t.micro_batch = 1, t.global_batch = 64;
  t.precision = Dtype::fp32;
  return t;
}

// Megatron receives into the tensors that become the stage's input or the output's grad:
// a training pipeline has no send/receive buffers of its own; serving keeps one each way.
TEST(Buffers, PipelineTrainingHasNoSendReceiveBuffers) {
  const ModelSpec m = test::gpt3_175b();
  Plan p;
  p.pp = 4;
  EXPECT_EQ(training_buffers(m, p, fp32_adam(), stage_params(m, p, 1)).pp_p2p, 0);
  InferenceWorkload inf;
  inf.batch = 1, inf.prompt_len = 2048;
  EXPECT_EQ(inference_buffers(m, p, inf).pp_p2p, 2 * 2 * 2048 * m.hidden);  // bf16, send + receive
}

// ZeRO-3: the bucket in use and the next one prefetched, but a stage that fits in one
// bucket has only that one; ZeRO-2/3 add one bucket of unsharded gradients.
TEST(Buffers, ZeroThreeGathersAtMostTwoBuckets) {
  EXPECT_EQ(zero3_gathered_buckets(40'000'000, 3'000'000), 1);
  EXPECT_EQ(zero3_gathered_buckets(40'000'000, 40'000'000), 1);
  EXPECT_EQ(zero3_gathered_buckets(40'000'000, 40'000'001), 2);
  EXPECT_EQ(zero3_gathered_buckets(40'000'000, 4'000'000'000), 2);

  const ModelSpec small = test::gpt2_small();
  Plan p;
  p.dp = 8, p.zero = 3;
  const StageParams whole = stage_params(small, p, 0);  // 124M parameters: 4 buckets of 40M
  const std::int64_t bucket = dp_bucket_params(p);
  ASSERT_GT(whole.total(), 3 * bucket);
  EXPECT_EQ(training_buffers(small, p, fp32_adam(), whole).dp_buckets, 4 * bucket + 2 * 4 * bucket);
  StageParams tiny;
  tiny.dense = 3'000'000;
  EXPECT_EQ(training_buffers(small, p, fp32_adam(), tiny).dp_buckets, 4 * 3'000'000 + 4 * 3'000'000);
  p.zero = 2;
  EXPECT_EQ(training_buffers(small, p, fp32_adam(), tiny).dp_buckets, 4 * 3'000'000);
  // plan.dp_bucket_size (Megatron's --ddp-bucket-size) replaces the default: 10M parameters,
  // ZeRO-3 holds one reduced and two gathered buckets of them
  p.zero = 3, p.dp_bucket_size = 10'000'000;
  EXPECT_EQ(dp_bucket_params(p), 10'000'000);
  EXPECT_EQ(training_buffers(small, p, fp32_adam(), whole).dp_buckets, 4 * 10'000'000 + 2 * 4 * 10'000'000);
}

}  // namespace
}  // namespace twinsim
