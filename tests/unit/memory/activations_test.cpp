// Activation memory per stage: micro-batches in flight per schedule and the first/last
// stage extras, against Korthikanti et al. 2022 §4.2.3 and §4.3.
#include <gtest/gtest.h>

#include "sim/memory/activations.hpp"
#include "sim/memory/stage_layers.hpp"
#include "tests/unit/memory/test_models.hpp"

namespace twinsim {
namespace {

Plan pipeline(int pp, Schedule schedule, int v = 1) {
  Plan p;
  p.pp = pp;
  p.schedule = schedule;
  p.virtual_stages = v;
  return p;
}

TEST(Activations, GpipeHoldsAllMicroBatches) {
  for (int stage : {0, 3}) EXPECT_EQ(chunks_in_flight(pipeline(4, Schedule::gpipe), stage, 16), 16);
}

// Narayanan et al. 2021 §2.2.1: 1F1B keeps at most p micro-batches on the first stage.
TEST(Activations, OneFOneBFirstStageHoldsPp) {
  const Plan p = pipeline(4, Schedule::one_f_one_b);
  EXPECT_EQ(chunks_in_flight(p, 0, 16), 4);
  EXPECT_EQ(chunks_in_flight(p, 3, 16), 1);
  EXPECT_EQ(chunks_in_flight(p, 0, 2), 2);  // fewer micro-batches than stages
}

// Megatron's interleaved warm-up (pp - stage - 1) * 2 + (v - 1) * pp, +1 in flight.
TEST(Activations, InterleavedHoldsMore) {
  const Plan p = pipeline(4, Schedule::interleaved, 2);
  EXPECT_EQ(chunks_in_flight(p, 0, 16), 3 * 2 + 4 + 1);
  EXPECT_EQ(chunks_in_flight(p, 3, 16), 0 + 4 + 1);
  EXPECT_EQ(chunks_in_flight(p, 0, 2), 2 * 2);  // at most m * v
}

// Stage layers of an interleaved schedule: chunk j * pp + stage (Narayanan Fig. 4).
TEST(Activations, InterleavedStagesTakeEveryPpThChunk) {
  ModelSpec m = test::mixtral_8x7b();
  m.moe->dense_layers = 4;
  const StageLayers s0 = stage_layers(m, pipeline(4, Schedule::interleaved, 2), 0);
  EXPECT_EQ(s0.dense, 4);  // chunk 0 = layers 0-3
  EXPECT_EQ(s0.moe, 4);    // chunk 4 = layers 16-19
  Plan uneven = pipeline(2, Schedule::one_f_one_b);
  uneven.stage_layers = {14, 18};
  EXPECT_EQ(stage_layers(m, uneven, 1).total(), 18);
}

// Korthikanti §4.2.3: the interleaved schedule's first stage holds
// L (1 + (p - 1) / (p v)) layers' activations against 1F1B's L.
TEST(Activations, InterleavedFirstStageFactorOfKorthikanti) {
  ModelSpec m = test::gpt3_175b();
  m.dropout = 0;  // leave the embedding mask out of the ratio
  TrainingWorkload t;
  t.seq_len = 2048, t.micro_batch = 1, t.global_batch = 64;
  const int p = 4, v = 3;
  const Plan plain = pipeline(p, Schedule::one_f_one_b);
  const Plan inter = pipeline(p, Schedule::interleaved, v);
  const LayerActivations per_layer = layer_activations(m, plain, {1, 2048, Dtype::bf16});
  // what the stage keeps: its peak less the first backward's working set (one layer's)
  auto kept = [&](const Plan& plan) {
    return training_activation_bytes(m, plan, StackSpec{}, t, per_layer, 0) - per_layer.dense_backward;
  };
  EXPECT_DOUBLE_EQ(static_cast<double>(kept(inter)) / kept(plain), 1.0 + (p - 1.0) / (p * v));
  // and 1F1B's first stage holds the whole model's layers once: L * per layer
  EXPECT_EQ(kept(plain), m.layers * per_layer.dense);
}

// Korthikanti §4.3: with SP the output layer adds 4sbh/t (1 + v/h): final-norm and
// output-layer inputs, fp32 logits; the embedding dropout mask sbh/t.
TEST(Activations, OutputLayerAndEmbeddingOfKorthikanti) {
  const ModelSpec m = test::gpt3_175b();
  Plan p;
  p.tp = 8, p.sequence_parallel = true;
  const std::int64_t s = 2048, b = 1, h = m.hidden, v = m.vocab, t = 8;
  EXPECT_EQ(output_activation_bytes(m, p, StackSpec{}, {b, s, Dtype::bf16}), 4 * s * b * h / t + 4 * s * b * v / t);
  EXPECT_EQ(embedding_activation_bytes(m, p, {b, s, Dtype::bf16}), s * b * h / t);
}

// A fused linear cross-entropy (Liger-Kernel, stack.loss_kernel: fused_linear) keeps no
// logits: the final norm's input and the input gradient it computed in the forward (2sbh
// each, bf16) and the weight's gradient (2vh): Llama-3-8B at 256K tokens, 4 GiB + 1 GiB
// instead of 125 GiB of fp32 logits.
TEST(Activations, FusedLinearCrossEntropyKeepsNoLogits) {
  ModelSpec m = test::gpt3_175b();
  m.vocab = 128256, m.hidden = 4096;
  const Plan p;
  StackSpec liger;
  liger.loss_kernel = std::string(kFusedLinearLoss);
  const std::int64_t s = 262144, h = m.hidden, v = m.vocab;
  EXPECT_EQ(output_activation_bytes(m, p, liger, {1, s, Dtype::bf16}), 2 * s * h + 2 * s * h + 2 * v * h);
  EXPECT_EQ(output_activation_bytes(m, p, StackSpec{}, {1, s, Dtype::bf16}), 4 * s * h + 4 * s * v);
}

// torchtitan's eager cross_entropy(pred.float()) (stack.loss_kernel: eager_fp32): the head's
// backward holds nll_loss's fp32 grad and log_softmax's beside the kept fp32 output, 8 bytes a
// logit on top of the 4 kept, where Megatron's loss writes its grad in place (the head's
// backward is then the output layer's input grad, 2sbh). Llama-3-8B at 8192 tokens: 8sv =
// 7.8 GiB; with TP 2 (loss_parallel) each rank holds its half of the vocabulary.
TEST(Activations, EagerFp32LossHoldsTwelveBytesALogit) {
  ModelSpec m = test::gpt3_175b();
  m.vocab = 128256, m.hidden = 4096;
  TrainingWorkload t;
  t.seq_len = 8192, t.micro_batch = 1, t.global_batch = 1;
  StackSpec eager;
  eager.loss_kernel = std::string(kEagerFp32Loss);
  const std::int64_t s = 8192, v = m.vocab, h = m.hidden;
  Plan p;
  EXPECT_EQ(eager_fp32_loss_transient_bytes(s * v, false), 8 * s * v);
  EXPECT_EQ(stage_backward_bytes(m, p, eager, t, 0, false, 0), 8 * s * v);
  EXPECT_EQ(stage_backward_bytes(m, p, StackSpec{}, t, 0, false, 0), 2 * s * h);
  // loss_parallel's forward holds the 16-bit logits (2), their fp32 copy (4), shifted (4) and
  // exp(shifted) (4) at once, 14 bytes: 10 beyond the kept output's 4. Its fused backward,
  // (grad_input + exp(x)) * grad_output, holds grad_input (4), exp(x) (4) and the sum (4) beside
  // the kept x (4): 12 beyond it, the larger of the two
  p.tp = 2;
  EXPECT_EQ(eager_fp32_loss_transient_bytes(s * v / 2, true), 12 * s * v / 2);
  EXPECT_EQ(stage_backward_bytes(m, p, eager, t, 0, false, 0), 12 * s * v / 2);
}

// PyTorch's ring attention backward (stack.cp_exchange: torch_all_gather) at Llama 3.1 405B's
// attention, TP 8 and CP 8, one sequence of 262144 tokens: by hand, a rank's Q has 262144 / 8
// tokens x (128 heads / 8) x 128 = 67,108,864 elements (N); the gathered K,V 8 x 2N and the
// step's K,V cat 2N in bf16 (36N bytes), fp32 dQ (4N) and dK,dV thrice (24N): 64N = 4 GiB.
// Nothing without CP, nothing under the ring exchange (its chunks are buffers).
TEST(Activations, TorchRingAttentionBackwardHoldsGatheredKvAndFp32Grads) {
  ModelSpec m = test::gpt3_175b();
  m.hidden = 16384, m.heads = 128, m.head_dim = 128, m.kv_heads = 8;
  Plan p;
  p.tp = 8, p.cp = 8;
  StackSpec torch;
  torch.cp_exchange = std::string(kTorchAllGatherCpExchange);
  const MicroBatchShape shape{1, 262144, Dtype::bf16};
  EXPECT_EQ(torch_cp_backward_bytes(m, p, torch, shape), 64 * std::int64_t{67'108'864});
  EXPECT_EQ(torch_cp_backward_bytes(m, p, StackSpec{}, shape), 0);
  p.cp = 1;
  EXPECT_EQ(torch_cp_backward_bytes(m, p, torch, shape), 0);
}

// Full recompute keeps 2sbh per layer and brings one layer's full set back during its
// backward: L * 2sbh + (sbh(34 + 5as/h) - 2sbh) on a single stage of one micro-batch,
// plus that layer's gradients in flight; the head's tensors are gone by then.
TEST(Activations, FullRecomputeAddsOneLayerWorkingSet) {
  ModelSpec m = test::gpt3_175b();
  m.layers = 4;
  Plan p;
  p.recompute = Recompute::full;
  p.flash_attention = false;
  TrainingWorkload t;
  t.seq_len = 2048, t.micro_batch = 1, t.global_batch = 1;
  const std::int64_t s = 2048, h = m.hidden, a = m.heads, sbh = s * h;
  const LayerActivations per_layer = layer_activations(m, p, {1, s, Dtype::bf16});
  EXPECT_EQ(per_layer.dense, 2 * sbh);
  EXPECT_EQ(per_layer.dense_recompute, 34 * sbh + 5 * a * s * s - 2 * sbh);
  // without flash attention the core's backward (dO, dQ, dK, dV and the probabilities'
  // grad, 2sbh + 6sbh + 2as^2) outweighs the MLP's once the MLP's 21sbh are gone
  const std::int64_t attention_saved = 13 * sbh + 5 * a * s * s;  // Korthikanti §4.1: 11sbh + 5as^2b + 2sbh norm input
  EXPECT_EQ(per_layer.dense_backward, attention_saved + 2 * sbh + (2 + 6) * sbh + 2 * a * s * s - 2 * sbh);
  EXPECT_GT(per_layer.dense_backward, per_layer.dense_recompute);
  const std::int64_t output = output_activation_bytes(m, p, StackSpec{}, {1, s, Dtype::bf16});
  const std::int64_t extras = embedding_activation_bytes(m, p, {1, s, Dtype::bf16}) + output;
  EXPECT_EQ(training_activation_bytes(m, p, StackSpec{}, t, per_layer, 0),
            4 * 2 * sbh + extras + per_layer.dense_backward - output);
}

// The gradients one layer's backward holds at once (layer_backward_bytes), by hand for
// GPT-3 (bf16, flash attention, no dropout): dy 2sbh; the MLP's peak is at fc2's dgrad,
// dy + d(GeLU out) 8sbh, or at the GeLU's backward, dy + d(GeLU in) 8sbh less its freed
// input: 10sbh; the attention's, dy + dO + dQ dK dV = 10sbh, comes after the MLP's 20sbh
// are freed. So 10sbh on top of the whole layer.
TEST(Activations, LayerBackwardHoldsTheMlpGradients) {
  ModelSpec m = test::gpt3_175b();
  m.dropout = 0;
  const std::int64_t s = 2048, sbh = s * m.hidden;
  EXPECT_EQ(layer_backward_bytes(m, 0, Plan{}, {1, s, Dtype::bf16}), 10 * sbh);
  // TP 8 with SP: dy 2sbh/8; at fc2's dgrad its all-gather 2sbh + d(GeLU out) 8sbh/8
  Plan tp;
  tp.tp = 8, tp.sequence_parallel = true;
  EXPECT_EQ(layer_backward_bytes(m, 0, tp, {1, s, Dtype::bf16}), 2 * sbh / 8 + 2 * sbh + sbh);
  // selective recompute brings the core back (its scores and output O, 2sbh) at the
  // attention's point, after the MLP's tensors are gone: with flash attention that is
  // still below the MLP's point
  Plan sel;
  sel.recompute = Recompute::selective;
  EXPECT_EQ(layer_backward_bytes(m, 0, sel, {1, s, Dtype::bf16}), 10 * sbh);
  // without it the attention's point is the attention half again (12sbh + scores 2as^2),
  // O, and dy + dO + dQ dK dV + the probabilities' grad (10sbh + scores), against the
  // 32sbh the layer keeps
  sel.flash_attention = false;
  const std::int64_t scores = 2 * m.heads * s * s;
  EXPECT_EQ(layer_backward_bytes(m, 0, sel, {1, s, Dtype::bf16}),
            12 * sbh + scores + 2 * sbh + 10 * sbh + scores - 32 * sbh);
}

// SwiGLU's backward holds the grads of both up projections (gate and up) while their
// product's grad is being replaced: dy + 2 x d(ffn) (Llama 2 7B, bf16).
TEST(Activations, SwigluBackwardHoldsGateAndUpGrads) {
  const ModelSpec m = test::llama2_7b();
  const std::int64_t s = 4096, sbh = s * m.hidden, ffn = 2 * s * m.ffn_hidden;
  EXPECT_EQ(layer_backward_bytes(m, 0, Plan{}, {1, s, Dtype::bf16}), 2 * sbh + 2 * ffn);
}

// Mixtral 8x7B (bf16, top 2 of 8, no shared experts), tokens s, D = 2sh: the MoE backward
// holds dy and dn (2D), then the combine's grads (the fp32 probabilities' 32s and the
// experts' output grad, 2D, while their saved output 2D is freed), then the experts'
// activation grads: with d(gate), d(up) 2 x Rf (Rf = 2 x s x 2 x 14336) once the output
// grad and act are gone, 2D + 32s - 2D + 2Rf, above the combine's 4D + 32s.
TEST(Activations, MoeBackwardHoldsTheCombineAndExpertGrads) {
  const ModelSpec m = test::mixtral_8x7b();
  const std::int64_t s = 4096, d = 2 * s * m.hidden, rows_f = 2 * s * 2 * 14336, probs = 4 * s * 8;
  EXPECT_EQ(layer_backward_bytes(m, 0, Plan{}, {1, s, Dtype::bf16}), probs + 2 * rows_f);
  // a shared expert (width 14336) comes first: dy + its two activation grads 2 x 2s x 14336
  // (7D/2 each) = 8D, after which its 3 x 7D/2 kept tensors are freed
  ModelSpec shared = m;
  shared.moe->shared_experts = 1;
  EXPECT_EQ(layer_backward_bytes(shared, 0, Plan{}, {1, s, Dtype::bf16}), 8 * d);
}

// A MoE model's leading dense layers are backpropagated last on their stage, after the
// micro-batch's MoE layers have freed what they kept: their working set counts from there.
TEST(Activations, LeadingDenseLayerBackwardAfterTheMoeLayersFreed) {
  ModelSpec m = test::mixtral_8x7b();
  m.layers = 4;
  m.moe->dense_layers = 1;
  m.dropout = 0;  // no embedding extras on stage 0
  TrainingWorkload t;
  t.seq_len = 512, t.micro_batch = 1, t.global_batch = 1;
  Plan p = pipeline(2, Schedule::one_f_one_b);  // stage 0: the dense layer 0 and the MoE layer 1
  LayerActivations a;
  a.dense = 1000, a.moe = 400, a.moe_backward = 100;
  for (const std::int64_t dense_backward : {300, 450, 2000}) {
    a.dense_backward = dense_backward;
    const std::int64_t first_backward = std::max<std::int64_t>(100, dense_backward - 400);
    EXPECT_EQ(training_activation_bytes(m, p, StackSpec{}, t, a, 0), 1000 + 400 + first_backward) << dense_backward;
  }
}

// The last stage's peak is its head's backward (the output layer's input grad next to
// the logits) or its last layer's, whose head is gone by then; other stages the layer's.
TEST(Activations, LastStageTakesTheLargerOfHeadAndLayerBackward) {
  const ModelSpec m = test::gpt3_175b();
  TrainingWorkload t;
  t.seq_len = 2048, t.micro_batch = 1, t.global_batch = 8;
  Plan p = pipeline(4, Schedule::one_f_one_b);
  p.tp = 8, p.sequence_parallel = true;
  const MicroBatchShape shape{1, 2048, Dtype::bf16};
  const std::int64_t full = 2 * 2048 * m.hidden;
  EXPECT_EQ(head_backward_bytes(m, p, shape), full);  // not divided by SP
  const std::int64_t output = output_activation_bytes(m, p, StackSpec{}, shape);
  EXPECT_EQ(stage_backward_bytes(m, p, StackSpec{}, t, output + full + 1, true, 3), full + 1);
  EXPECT_EQ(stage_backward_bytes(m, p, StackSpec{}, t, 5, true, 3), full);
  EXPECT_EQ(stage_backward_bytes(m, p, StackSpec{}, t, 5, true, 0), 5);
  EXPECT_EQ(stage_backward_bytes(m, p, StackSpec{}, t, 5, false, 1), 0);
}

TEST(Activations, MicroBatchScalesLinearly) {
  const ModelSpec m = test::llama2_7b();
  Plan p;
  p.flash_attention = false;  // flash's logsumexp is fp32 whatever the activation dtype
  const LayerActivations one = layer_activations(m, p, {1, 4096, Dtype::bf16});
  const LayerActivations four = layer_activations(m, p, {4, 4096, Dtype::bf16});
  EXPECT_EQ(four.dense, 4 * one.dense);
  EXPECT_EQ(activation_dtype(Dtype::fp8), Dtype::bf16);
  EXPECT_EQ(layer_activations(m, p, {1, 4096, Dtype::fp32}).dense, 2 * one.dense);
}

}  // namespace
}  // namespace twinsim
