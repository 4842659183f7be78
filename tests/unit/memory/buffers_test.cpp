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
  EXPECT_EQ(training_buffers(m, p, StackSpec{}, GpuSpec{}, fp32_adam(), stage_params(m, p, 1)).pp_p2p, 0);
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
  EXPECT_EQ(training_buffers(small, p, StackSpec{}, GpuSpec{}, fp32_adam(), whole).dp_buckets, 4 * bucket + 2 * 4 * bucket);
  StageParams tiny;
  tiny.dense = 3'000'000;
  EXPECT_EQ(training_buffers(small, p, StackSpec{}, GpuSpec{}, fp32_adam(), tiny).dp_buckets, 4 * 3'000'000 + 4 * 3'000'000);
  p.zero = 2;
  EXPECT_EQ(training_buffers(small, p, StackSpec{}, GpuSpec{}, fp32_adam(), tiny).dp_buckets, 4 * 3'000'000);
  // plan.dp_bucket_size (Megatron's --ddp-bucket-size) replaces the default: 10M parameters,
  // ZeRO-3 holds one reduced and two gathered buckets of them
  p.zero = 3, p.dp_bucket_size = 10'000'000;
  EXPECT_EQ(dp_bucket_params(p), 10'000'000);
  EXPECT_EQ(training_buffers(small, p, StackSpec{}, GpuSpec{}, fp32_adam(), whole).dp_buckets, 4 * 10'000'000 + 2 * 4 * 10'000'000);
}

// fp8 under ZeRO-3: each gathered bucket's weight matrices also get their fp8 copies, the
// fp8 weight and on Hopper its transpose. A stage of 30M parameters, 24M of them in weight
// matrices, and buckets of 10M: one reduced bucket of bf16 gradients (2 bytes) and two
// gathered ones of 10M bf16 parameters plus 8M matrix parameters x 2 fp8 bytes.
TEST(Buffers, Fp8ZeroThreeCastsTheGatheredMatrices) {
  const ModelSpec small = test::gpt2_small();
  Plan p;
  p.dp = 8, p.zero = 3, p.dp_bucket_size = 10'000'000;
  TrainingWorkload t = fp32_adam();
  t.precision = Dtype::fp8;
  StageParams stage;
  stage.dense = 30'000'000, stage.matrices = 24'000'000;
  GpuSpec hopper;
  hopper.fp8_gemm_tn_only = true;
  EXPECT_EQ(training_buffers(small, p, StackSpec{}, hopper, t, stage).dp_buckets,
            2 * 10'000'000 + 2 * (2 * 10'000'000 + 2 * 8'000'000));
  EXPECT_EQ(training_buffers(small, p, StackSpec{}, GpuSpec{}, t, stage).dp_buckets,
            2 * 10'000'000 + 2 * (2 * 10'000'000 + 8'000'000));
}

// DeepSpeed (a stack with zero_reduce_bucket_params) allocates its reduce buckets whole:
// 5e8 gradients of 4 bytes (fp32 here) twice under overlap_comm for ZeRO-1/2, once for
// ZeRO-3, beside ZeRO-3's gathered parameter buckets; Megatron (no such stack setting) keeps
// ZeRO-1's buckets inside the gradient buffer.
TEST(Buffers, DeepSpeedAllocatesItsReduceBucketsWhole) {
  const ModelSpec small = test::gpt2_small();
  StackSpec deepspeed;
  deepspeed.zero_reduce_bucket_params = 500'000'000;
  Plan p;
  p.dp = 8, p.zero = 1;
  const StageParams whole = stage_params(small, p, 0);
  EXPECT_EQ(training_buffers(small, p, StackSpec{}, GpuSpec{}, fp32_adam(), whole).dp_buckets, 0);
  EXPECT_EQ(training_buffers(small, p, deepspeed, GpuSpec{}, fp32_adam(), whole).dp_buckets, 2 * 4 * 500'000'000LL);
  p.zero = 2, p.overlap_grad_reduce = false;
  EXPECT_EQ(training_buffers(small, p, deepspeed, GpuSpec{}, fp32_adam(), whole).dp_buckets, 4 * 500'000'000LL);
  p.zero = 3, p.overlap_grad_reduce = true;
  const std::int64_t gathered = 4 * 2 * dp_bucket_params(p);  // two gathered buckets of fp32 parameters
  EXPECT_EQ(training_buffers(small, p, deepspeed, GpuSpec{}, fp32_adam(), whole).dp_buckets, 4 * 500'000'000LL + gathered);
}

}  // namespace
}  // namespace twinsim
