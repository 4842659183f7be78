// Parameters, gradients and optimizer states per GPU against the ZeRO paper and the
// published parameter counts.
#include <gtest/gtest.h>

#include "models/param_count.hpp"
#include "sim/memory/weights.hpp"
#include "tests/unit/memory/test_models.hpp"

namespace twinsim {
namespace {

std::int64_t total(const WeightMemory& w) { return w.params + w.grads + w.optimizer; }

// Rajbhandari et al. 2020 (ZeRO), Figure 1: 7.5B parameters, N_d = 64, Adam with mixed
// precision (K = 12): 120 GB baseline, 31.4 GB (P_os), 16.6 GB (P_os+g), 1.88 GB (P_os+g+p).
TEST(Weights, ZeroPaperFigure1) {
  const std::int64_t psi = 7'500'000'000;
  const BytesPerParam mixed = training_bytes_per_param(Dtype::fp16, Optimizer::adam);
  EXPECT_EQ(total(zero_sharded(psi, mixed, 0, 64)), 120'000'000'000);
  EXPECT_NEAR(total(zero_sharded(psi, mixed, 1, 64)) / 1e9, 31.4, 0.05);
  EXPECT_NEAR(total(zero_sharded(psi, mixed, 2, 64)) / 1e9, 16.6, 0.05);
  EXPECT_NEAR(total(zero_sharded(psi, mixed, 3, 64)) / 1e9, 1.88, 0.005);
}

// ZeRO §3.1: mixed-precision Adam keeps 2 + 2 + 12 bytes per parameter.
TEST(Weights, BytesPerParameter) {
  const BytesPerParam bf16_adam = training_bytes_per_param(Dtype::bf16, Optimizer::adam);
  EXPECT_EQ(bf16_adam.params + bf16_adam.grads + bf16_adam.optimizer, 16);
  const BytesPerParam fp32_adam = training_bytes_per_param(Dtype::fp32, Optimizer::adam);
  EXPECT_EQ(fp32_adam.params + fp32_adam.grads + fp32_adam.optimizer, 16);  // 4 + 4 + m, v
  const BytesPerParam bf16_sgd = training_bytes_per_param(Dtype::bf16, Optimizer::sgd);
  EXPECT_EQ(bf16_sgd.optimizer, 8);  // fp32 master + momentum
  EXPECT_THROW(training_bytes_per_param(Dtype::int4, Optimizer::adam), std::invalid_argument);
}

// GPT-2 small on one GPU holds all 124,439,808 parameters (HF gpt2).
TEST(Weights, OneGpuHoldsTheWholeModel) {
  Plan p;
  EXPECT_EQ(stage_params(test::gpt2_small(), p, 0).total(), 124'439'808);
  EXPECT_EQ(stage_params(test::llama2_7b(), p, 0).total(), 6'738'415'616);  // Touvron et al. 2023
}

// With pp > 1 and tied embeddings the last stage keeps its own copy of the word
// embedding for the logits (Megatron), so the stages sum to total + vocab * h.
TEST(Weights, PipelineStagesPartitionTheLayers) {
  Plan p;
  p.pp = 4;
  const ModelSpec m = test::gpt2_small();
  std::int64_t sum = 0;
  for (int stage = 0; stage < 4; ++stage) sum += stage_params(m, p, stage).total();
  EXPECT_EQ(sum, count_params(m).total + m.vocab * m.hidden);
  const ModelSpec llama = test::llama2_7b();  // untied: nothing duplicated
  sum = 0;
  for (int stage = 0; stage < 4; ++stage) sum += stage_params(llama, p, stage).total();
  EXPECT_EQ(sum, count_params(llama).total);
}

// TP splits the matrices, column biases and vocabulary; LayerNorm (scale and shift),
// the row-parallel biases and the learned positions stay whole on every GPU.
TEST(Weights, TensorParallelHalvesTheShardedPart) {
  const ModelSpec m = test::gpt2_small();
  Plan p;
  const std::int64_t whole = stage_params(m, p, 0).total();
  const std::int64_t replicated = m.layers * (2 * 2 * m.hidden + 2 * m.hidden)  // 2 norms, 2 row biases
                                  + m.max_seq_len * m.hidden + 2 * m.hidden;       // positions, final norm
  p.tp = 2;
  EXPECT_EQ(stage_params(m, p, 0).total(), (whole - replicated) / 2 + replicated);
}

// ZeRO-3 shards the parameters themselves over data parallelism (and CP ranks).
TEST(Weights, ZeroStage3ShardsParameters) {
  const ModelSpec m = test::llama2_7b();
  Plan p;
  p.dp = 8;
  TrainingWorkload t;
  const std::int64_t params = stage_params(m, p, 0).total();
  p.zero = 1;
  const WeightMemory z1 = training_weight_memory(m, p, StackSpec{}, GpuSpec{}, t, 0);
  EXPECT_EQ(z1.params, 2 * params);
  EXPECT_EQ(z1.optimizer, 12 * ((params + 7) / 8));
  p.zero = 3;
  EXPECT_EQ(training_weight_memory(m, p, StackSpec{}, GpuSpec{}, t, 0).params, 2 * ((params + 7) / 8));
}

// Eight data-parallel ranks under Megatron's distributed optimizer (ZeRO 1).
Plan dp8_zero1() {
  Plan p;
  p.dp = 8;
  p.zero = 1;
  return p;
}

// fp8 training keeps the 16-bit model and, for each transformer layer's weight matrix,
// Transformer Engine's cached fp8 weight, plus its fp8 transpose where the GPU's fp8 GEMMs
// take only the TN layout (Hopper). Llama-2-7B by hand: a layer's matrices 4 x 4096^2
// (q, k, v, o) + 3 x 4096 x 11008 = 202,375,168, 32 layers 6,476,005,376 of the
// 6,738,415,616 parameters; the rest (embedding, output layer, norms) stays 16-bit. Under
// ZeRO-3 the gathered layers are cast as they come: no copies kept.
TEST(Weights, Fp8KeepsTheLayersFp8WeightsAndOnHopperTheirTransposes) {
  const ModelSpec m = test::llama2_7b();
  Plan p = dp8_zero1();
  TrainingWorkload t;
  t.precision = Dtype::fp8;
  const std::int64_t params = 6'738'415'616, matrices = 6'476'005'376;
  ASSERT_EQ(stage_params(m, p, 0).total(), params);
  EXPECT_EQ(stage_params(m, p, 0).matrices, matrices);
  GpuSpec hopper, blackwell;
  hopper.fp8_gemm_tn_only = true;
  EXPECT_EQ(training_weight_memory(m, p, StackSpec{}, hopper, t, 0).params, 2 * params + 2 * matrices);
  EXPECT_EQ(training_weight_memory(m, p, StackSpec{}, blackwell, t, 0).params, 2 * params + matrices);
  t.precision = Dtype::bf16;
  EXPECT_EQ(training_weight_memory(m, p, StackSpec{}, hopper, t, 0).params, 2 * params);
  t.precision = Dtype::fp8;
  p.zero = 3;
  EXPECT_EQ(training_weight_memory(m, p, StackSpec{}, hopper, t, 0).params, 2 * ((params + 7) / 8));
}

// Megatron keeps bf16 and fp8 training's gradients in an fp32 buffer (grad_reduce_fp32), 18
// bytes a parameter with Adam before ZeRO where the ZeRO paper counts 16; fp16's stay fp16.
// The distributed optimizer (ZeRO 1) shards the optimizer's states, not that buffer.
TEST(Weights, MegatronKeepsBf16GradientsInFp32) {
  const ModelSpec m = test::llama2_7b();
  const Plan p = dp8_zero1();
  TrainingWorkload t;
  StackSpec megatron;
  megatron.grad_reduce_fp32 = true;
  const std::int64_t params = stage_params(m, p, 0).total();
  for (Dtype precision : {Dtype::bf16, Dtype::fp8, Dtype::fp16}) {
    t.precision = precision;
    const WeightMemory plain = training_weight_memory(m, p, StackSpec{}, GpuSpec{}, t, 0);
    const WeightMemory fp32 = training_weight_memory(m, p, megatron, GpuSpec{}, t, 0);
    EXPECT_EQ(plain.grads, 2 * params) << to_string(precision);
    EXPECT_EQ(fp32.grads, (precision == Dtype::fp16 ? 2 : 4) * params) << to_string(precision);
    EXPECT_EQ(fp32.params, plain.params);
    EXPECT_EQ(fp32.optimizer, plain.optimizer);
  }
  EXPECT_EQ(training_bytes_per_param(Dtype::bf16, Optimizer::adam, megatron, {}).grads, 4);
}

// FSDP2 under PP as torchtitan runs it (StackSpec::fsdp_pp_keep_gathered): each stage keeps
// its whole parameters gathered and its gradients unsharded in fp32 beside the shards. A
// Llama of 8 layers (h 1024, 8 heads, FFN 2816, vocabulary 32,000) on pp 2: stage 0 holds 4
// layers of 4 x 1024^2 + 3 x 1024 x 2816 + 2 x 1024 = 12,847,104 parameters and the
// 32,768,000-parameter embedding, 84,156,416 in all: 2 bytes each more parameters in bf16,
// 4 more gradients; under fp8 the 4 layers' weight matrices (51,380,224) gather in fp8.
TEST(Weights, FsdpUnderPipelineKeepsTheStageGathered) {
  const ModelSpec m = test::llama2(8, 1024, 8, 8, 2816);
  Plan p;
  p.pp = 2, p.dp = 4, p.zero = 3;
  TrainingWorkload t;
  t.precision = Dtype::bf16;
  StackSpec fsdp2;
  fsdp2.grad_reduce_fp32 = true;
  StackSpec keeping = fsdp2;
  keeping.fsdp_pp_keep_gathered = true;
  constexpr std::int64_t stage = 84'156'416, matrices = 4 * (4 * 1024 * 1024 + 3 * 1024 * 2816);
  ASSERT_EQ(stage_params(m, p, 0).total(), stage);
  const WeightMemory sharded = training_weight_memory(m, p, fsdp2, GpuSpec{}, t, 0);
  const WeightMemory kept = training_weight_memory(m, p, keeping, GpuSpec{}, t, 0);
  EXPECT_EQ(kept.params - sharded.params, 2 * stage);
  EXPECT_EQ(kept.grads - sharded.grads, 4 * stage);
  EXPECT_EQ(kept.optimizer, sharded.optimizer);
  t.precision = Dtype::fp8;
  EXPECT_EQ(training_weight_memory(m, p, keeping, GpuSpec{}, t, 0).params -
                training_weight_memory(m, p, fsdp2, GpuSpec{}, t, 0).params,
            matrices + 2 * (stage - matrices));
  p.pp = 1;  // without pipeline stages FSDP reshards after each use
  EXPECT_EQ(training_weight_memory(m, p, keeping, GpuSpec{}, t, 0).params,
            training_weight_memory(m, p, fsdp2, GpuSpec{}, t, 0).params);
}

// Mixtral with EP 8: each GPU holds one of the eight experts of each layer.
TEST(Weights, ExpertParallelSplitsTheExperts) {
  const ModelSpec m = test::mixtral_8x7b();
  Plan p;
  const std::int64_t experts_whole = stage_params(m, p, 0).expert;
  EXPECT_EQ(experts_whole, m.layers * 8 * 3 * 4096 * 14336);
  p.ep = 8;
  p.dp = 8;
  EXPECT_EQ(stage_params(m, p, 0).expert, experts_whole / 8);
  // ZeRO-1 shards expert optimizer states over dp*cp/ep = 1 GPU: not at all.
  p.zero = 1;
  TrainingWorkload t;
  EXPECT_EQ(training_weight_memory(m, p, StackSpec{}, GpuSpec{}, t, 0).optimizer,
            12 * ((stage_params(m, p, 0).dense + 7) / 8) + 12 * (experts_whole / 8));
}

// int4 with one fp16 scale per 128 weights: 0.5 + 2/128 bytes per matrix weight.
TEST(Weights, Int4InferenceWeights) {
  StageParams p;
  p.dense = p.matrices = 128'000;
  EXPECT_EQ(inference_weight_bytes(p, Dtype::int4), 64'000 + 2'000);
  p.dense += 1'000;  // a norm: stays 16-bit
  EXPECT_EQ(inference_weight_bytes(p, Dtype::int4), 64'000 + 2'000 + 2'000);
  EXPECT_EQ(inference_weight_bytes(p, Dtype::bf16), 2 * 129'000);
}

}  // namespace
}  // namespace twinsim
