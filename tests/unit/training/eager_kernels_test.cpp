// The stack's Hugging Face eager kernels (sim/training/eager_kernels): the census's bytes read
// off HF's code by hand, their place in a layer's price, and the scenarios it refuses.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "models/op_names.hpp"
#include "scenario/load.hpp"
#include "tests/unit/scenario/words.hpp"
#include "sim/cost/compute_cost.hpp"
#include "sim/memory/hf_eager_memory.hpp"
#include "sim/training/eager_kernels.hpp"
#include "sim/training/layer_costs.hpp"
#include "tests/unit/scenario/expect_refused.hpp"

namespace twinsim {
namespace {

// Llama-3.2-1B (hidden 2048, 32 heads of 64, 8 KV heads, FFN 8192): 1 x 1024 tokens
Scenario llama_1b(const std::vector<std::string>& sets) {
  const std::string text = R"(
model: llama3.2-1b
cluster: dgx-h100
training: {seq_len: 1024, global_batch: 1, micro_batch: 1, precision: bf16}
plan: {tp: 1, pp: 1, dp: 1}
stack: hf-eager
)";
  return load_scenario_text(text, sets);
}

const OpTime& find(const LayerCost& c, const char* name) {
  for (const OpTime& op : c.ops)
    if (op.name == name) return op;
  ADD_FAILURE() << name;
  return c.ops.front();
}

constexpr double kTokens = 1024, kHidden = 2048, kQ = 2048, kKv = 512, kFfn = 8192, kVocab = 128256;
constexpr double kParams = 1235814400;  // Llama-3.2-1B, tied embeddings

TEST(HfEagerKernels, RmsNormMovesWhatLlamaRmsNormReadsAndWrites) {
  // LlamaRMSNorm.forward on the fp32 residual stream: x.pow(2) reads and writes 4 + 4 bytes
  // per element, .mean(-1) reads 4, x * rsqrt(var + eps) 4 + 4, weight * x 4 + 4: 28 bytes in
  // 4 kernels, and 2 per-token kernels (+ eps, rsqrt)
  const LayerCost layer = cost_layer(llama_1b({}), 0);
  const OpTime& norm = find(layer, op_names::kAttnNorm);
  EXPECT_DOUBLE_EQ(norm.fwd_bytes, 28 * kTokens * kHidden);
  EXPECT_EQ(norm.fwd_launches, 6);
  // each kernel at the H100's 0.85 of 3.35 TB/s plus a 4 us launch (hardware/catalog/gpus/h100-sxm.yaml)
  const GpuSpec& gpu = llama_1b({}).cluster.gpu;
  const double hbm = gpu.hbm_bandwidth_Bps * 0.85;
  EXPECT_NEAR(norm.fwd_s, 28 * kTokens * kHidden / hbm + 6 * gpu.kernel_launch_s, 1e-12);
}

TEST(HfEagerKernels, AutocastCastsEachLinearLayersInputAndWeight) {
  // q_proj, k_proj and v_proj each cast the fp32 normed input to bf16 (4 + 2 bytes per element)
  // and their fp32 weight (once per forward: autocast's cache holds a leaf's cast)
  const Scenario s = llama_1b({});
  const LayerCost eager = cost_layer(s, 0);
  const LayerCost fused = cost_layer(llama_1b({"stack=none"}), 0);
  const OpTime& qkv = find(eager, op_names::kAttnQkv);
  const OpTime& plain = find(fused, op_names::kAttnQkv);
  const double casts = 3 * 6 * kTokens * kHidden + 6 * kHidden * (kQ + 2 * kKv);
  EXPECT_DOUBLE_EQ(qkv.fwd_bytes - plain.fwd_bytes, casts);
  EXPECT_EQ(qkv.fwd_launches, 3 + 6);  // q_proj, k_proj, v_proj's GEMMs (separate_projections) and the casts
  // backward: the weights' grads cast back to fp32 (2 + 4) and copied into .grad (4 + 4) per
  // value, the input's three grads cast to fp32 and summed: 3 x 6 + 2 x 12 bytes per element
  EXPECT_DOUBLE_EQ(qkv.wgrad_bytes - plain.wgrad_bytes, 14 * kHidden * (kQ + 2 * kKv));
  EXPECT_DOUBLE_EQ(qkv.dgrad_bytes - plain.dgrad_bytes, 42 * kTokens * kHidden);
}

TEST(HfEagerKernels, CoveredRowsReplaceTheFusedKernel) {
  // SwiGLU: silu(gate) reads and writes 2 + 2 bytes per bf16 element, * up 2 + 2 + 2: 10 bytes,
  // where the op list's fused kernel reads gate and up and writes one: 6
  const LayerCost eager = cost_layer(llama_1b({}), 0);
  const LayerCost fused = cost_layer(llama_1b({"stack=none"}), 0);
  EXPECT_DOUBLE_EQ(find(eager, op_names::kMlpAct).fwd_bytes, 10 * kTokens * kFfn);
  EXPECT_DOUBLE_EQ(find(fused, op_names::kMlpAct).fwd_bytes, 6 * kTokens * kFfn);
  EXPECT_EQ(find(eager, op_names::kMlpAct).fwd_launches, 2);
  // the GEMMs' math is the op list's: one layer's FLOPs unchanged
  EXPECT_DOUBLE_EQ(eager.fwd_flops(), fused.fwd_flops());
  EXPECT_DOUBLE_EQ(eager.bwd_flops(), fused.bwd_flops());
}

// A layer's kernels (not the head's), for a model with the given features, in one census.
std::pair<int, int> layer_kernels(const ModelSpec& model, HfParams params = HfParams::fp32_autocast) {
  int fwd = 0, bwd = 0;
  for (const EagerKernels& k : hf_eager_kernels(params))
    if ((std::string(k.row).rfind("attn.", 0) == 0 || std::string(k.row).rfind("mlp.", 0) == 0) &&
        applies(k.variant, model))
      (k.backward ? bwd : fwd) += k.kernels;
  return {fwd, bwd};
}

TEST(HfEagerKernels, TheCensusCountsOneLayersKernels) {
  ModelSpec llama = llama_1b({}).model;
  EXPECT_EQ(layer_kernels(llama), std::make_pair(42, 85));
  ModelSpec qwen2 = llama, qwen3 = llama;
  qwen2.qkv_bias = true;
  qwen3.qk_norm = true;
  EXPECT_EQ(layer_kernels(qwen2), std::make_pair(42 + 3, 85 + 9));
  EXPECT_EQ(layer_kernels(qwen3), std::make_pair(42 + 16, 85 + 36 - 4));  // RoPE's grads need no cast back
}

// Llama-3.2-1B, 1 x 1024 tokens, under torchtitan's compiled stack whose loss stays eager
// (stack.loss_kernel eager_fp32: torchtitan 2024-12 compiles the blocks, not loss_fn).
Scenario compiled_blocks_eager_loss(int tp, const std::string& stack) {
  const std::string text = R"(
model: llama3.2-1b
cluster: dgx-h100
training: {seq_len: 1024, global_batch: 8, micro_batch: 1, precision: bf16}
plan: {tp: )" + std::to_string(tp) +
                           ", pp: 1, dp: " + std::to_string(8 / tp) + R"(}
stack: {preset: )" + stack +
                           R"(, loss_kernel: eager_fp32}
)";
  return load_scenario_text(text, {});
}

TEST(EagerFp32Loss, BesideCompiledBlocksTheLossRunsTorchsEagerKernels) {
  // logits.float() reads 2 and writes 4 bytes a logit, log_softmax reads and writes 4 + 4:
  // 14 bytes in 2 kernels, and nll_loss's 3 per-token ones; backward nll_loss's fp32 gradient
  // (written 4), log_softmax's (reads 4 + 4, writes 4) and the cast back to bf16 (4 + 2):
  // 22 bytes in 3 kernels. The op list's fused loss moves 6 (reads 2, writes 4).
  const Scenario s = compiled_blocks_eager_loss(1, "torchtitan-compile");
  const OpTime& loss = find(cost_head(s), op_names::kHeadLoss);
  const double logits = kTokens * kVocab;
  EXPECT_DOUBLE_EQ(loss.fwd_bytes, 14 * logits);
  EXPECT_DOUBLE_EQ(loss.dgrad_bytes, 22 * logits);
  EXPECT_EQ(loss.fwd_launches, 5);
  EXPECT_EQ(loss.dgrad_launches, 3);
  // each kernel at the H100's 0.85 of 3.35 TB/s plus a 4 us launch (h100-sxm.yaml)
  const GpuSpec& gpu = s.cluster.gpu;
  EXPECT_NEAR(loss.fwd_s, 14 * logits / (gpu.hbm_bandwidth_Bps * 0.85) + 5 * gpu.kernel_launch_s, 1e-12);
  // compiled with the blocks (the preset's logits loss): the op list's 6 bytes a logit
  Scenario fused = s;
  fused.stack.loss_kernel = "logits";
  EXPECT_DOUBLE_EQ(find(cost_head(fused), op_names::kHeadLoss).fwd_bytes, 6 * logits);
}

TEST(EagerFp32Loss, LossParallelRunsItOnTheRanksVocabularyShard) {
  // TP 2: each rank's 128256 / 2 = 64128 logits a token (loss_parallel)
  const OpTime& loss = find(cost_head(compiled_blocks_eager_loss(2, "torchtitan-compile")), op_names::kHeadLoss);
  EXPECT_DOUBLE_EQ(loss.fwd_bytes, 14 * kTokens * 64128);
  EXPECT_DOUBLE_EQ(loss.dgrad_bytes, 22 * kTokens * 64128);
}

TEST(EagerFp32Loss, AnEagerCensusCountsItOnce) {
  // torchtitan's eager preset (hf_bf16) already runs the census's loss: 14 bytes a logit, not 28
  const OpTime& loss = find(cost_head(compiled_blocks_eager_loss(1, "torchtitan")), op_names::kHeadLoss);
  EXPECT_DOUBLE_EQ(loss.fwd_bytes, 14 * kTokens * kVocab);
  EXPECT_EQ(loss.fwd_launches, 5);
}

TEST(HfEagerKernels, QkvBiasesAddTheirGradientSums) {
  // Qwen2's q, k, v biases: autocast casts each bias (3 per-channel kernels); the backward sums
  // each projection's bf16 output gradient over the tokens (2 bytes per element read: 2 per
  // query element, 2 + 2 per key/value element), then casts and copies the three sums (6
  // per-channel kernels)
  const LayerCost plain = cost_layer(llama_1b({}), 0);
  const LayerCost biased = cost_layer(llama_1b({"model.qkv_bias=true"}), 0);
  const OpTime &a = find(plain, op_names::kAttnQkv), &b = find(biased, op_names::kAttnQkv);
  EXPECT_DOUBLE_EQ(b.dgrad_bytes - a.dgrad_bytes, 2 * kTokens * kQ + 4 * kTokens * kKv);
  EXPECT_EQ(b.fwd_launches - a.fwd_launches, 3);
  EXPECT_EQ(b.dgrad_launches - a.dgrad_launches, 9);
}

TEST(HfEagerKernels, QkNormRunsHfsRmsNormOnEachHeadAndKeepsQkInFp32) {
  // Qwen3's q_norm / k_norm: the eager RMSNorm on the bf16 projections (a cast to fp32 first,
  // 38 bytes per element in 6 kernels), its fp32 output then going through RoPE (10 bytes
  // more per element than from bf16)
  const LayerCost plain = cost_layer(llama_1b({}), 0);
  const LayerCost normed = cost_layer(llama_1b({"model.qk_norm=true"}), 0);
  EXPECT_DOUBLE_EQ(find(normed, op_names::kAttnQkNorm).fwd_bytes, 38 * kTokens * (kQ + kKv));
  EXPECT_EQ(find(normed, op_names::kAttnQkNorm).fwd_launches, 6 + 6 + 4);
  EXPECT_DOUBLE_EQ(find(normed, op_names::kAttnRope).fwd_bytes - find(plain, op_names::kAttnRope).fwd_bytes,
                   10 * kTokens * (kQ + kKv));
}

TEST(HfEagerKernels, SdpaPicksTheKernelTheGpuMeasures) {
  // cuDNN's curves on the H100, FlashAttention-2's on the A100 (which has no cuDNN curve)
  const auto attention = [](const char* cluster, const char* kernel) {
    const LayerCost c = cost_layer(llama_1b({std::string("cluster=") + cluster, "stack=none",
                                            std::string("stack.attention_kernel=") + kernel}), 0);
    return find(c, op_names::kAttnCore).fwd_s;
  };
  EXPECT_DOUBLE_EQ(attention("dgx-h100", "sdpa"), attention("dgx-h100", "cudnn"));
  EXPECT_DOUBLE_EQ(attention("dgx-a100-80gb", "sdpa"), attention("dgx-a100-80gb", "flash2"));
  EXPECT_NE(attention("dgx-h100", "cudnn"), attention("dgx-h100", "flash2"));
}

TEST(HfEagerMemory, TheModelStaysFp32AndAutogradKeepsWhatHfSaves) {
  // Llama-3.2-1B, 16 layers, 1 x 1024 tokens. A layer keeps 26 bytes per hidden element (its
  // input and each RMSNorm's output in fp32, the five bf16 casts of q, k, v, gate, up inputs),
  // 4 per query and key/value element, 8 per FFN element, 2 per weight (autocast's copies);
  // the head 10 per hidden element, the fp32 log-softmax (4 per logit), the output layer's
  // copy; the loss's backward two fp32 logit gradients on top (8 per logit).
  const Scenario s = llama_1b({});
  const double vocab = kVocab, weights = kHidden * (kQ + 2 * kKv) + kQ * kHidden + 3 * kHidden * kFfn;
  const double layer = 26 * kTokens * kHidden + 4 * kTokens * kQ + 4 * kTokens * kKv + 8 * kTokens * kFfn + 2 * weights;
  const double head = 10 * kTokens * kHidden + 4 * kTokens * vocab + 2 * vocab * kHidden;
  EXPECT_EQ(hf_eager_activation_bytes(s.model, s.plan, *s.training, 0, HfParams::fp32_autocast), static_cast<std::int64_t>(16 * layer + head + 8 * kTokens * vocab));
  // gradient checkpointing: each layer keeps its fp32 input, one layer's tensors come back
  // in the backward, less than the loss's gradients here
  const Scenario ckpt = llama_1b({"plan.recompute=full"});
  EXPECT_EQ(hf_eager_activation_bytes(ckpt.model, ckpt.plan, *ckpt.training, 0, HfParams::fp32_autocast),
            static_cast<std::int64_t>(16 * 4 * kTokens * kHidden + head + std::max(layer, 8 * kTokens * vocab)));
  // fp32 parameters (4 bytes) and Adam's two moments (8), no master copy; one micro-batch:
  // no gradients at the forward's end, the peak
  const MemoryReport m = predict_memory(s);
  EXPECT_EQ(m.breakdown.params, static_cast<std::int64_t>(4 * kParams));
  EXPECT_EQ(m.breakdown.optimizer, static_cast<std::int64_t>(8 * kParams));
  EXPECT_EQ(m.breakdown.grads, 0);
  // the peak is the forward's end: the activations all there (the backward's end holds none)
  EXPECT_EQ(m.breakdown.activations, hf_eager_activation_bytes(s.model, s.plan, *s.training, 0, HfParams::fp32_autocast));
  // two micro-batches: the second's forward runs beside the first's gradients
  const MemoryReport accumulating = predict_memory(llama_1b({"training.global_batch=2"}));
  EXPECT_EQ(accumulating.breakdown.grads, static_cast<std::int64_t>(4 * kParams));
}

// The stack `hf-deepspeed` (layer_kernels hf_bf16): the same modeling code on a model loaded
// in bf16, read off HF's code by hand.
TEST(HfBf16Kernels, RmsNormComputesInFp32OnABf16Stream) {
  // LlamaRMSNorm.forward on a bf16 input: .to(float32) reads 2 and writes 4 bytes per element,
  // .pow(2) 4 + 4, .mean(-1) 4, x * rsqrt 4 + 4, .to(bf16) 4 + 2, weight * x 2 + 2: 36 bytes in
  // 6 kernels, and the 2 per-token ones (+ eps, rsqrt)
  const LayerCost layer = cost_layer(llama_1b({"stack=hf-deepspeed"}), 0);
  const OpTime& norm = find(layer, op_names::kAttnNorm);
  EXPECT_DOUBLE_EQ(norm.fwd_bytes, 36 * kTokens * kHidden);
  EXPECT_EQ(norm.fwd_launches, 8);
  // the residual add reads two bf16 tensors and writes one: 6 bytes (autocast's fp32 stream: 10)
  EXPECT_DOUBLE_EQ(find(layer, op_names::kAttnResidual).fwd_bytes, 6 * kTokens * kHidden);
}

TEST(HfBf16Kernels, NoCastsOnTheLinearLayers) {
  // A bf16 model casts nothing: q, k, v's forward is the op list's GEMMs alone. The backward
  // sums the input's three grads (two adds of 2 + 2 + 2 bytes) and copies each weight's grad
  // into .grad (2 + 2 per value)
  const LayerCost bf16 = cost_layer(llama_1b({"stack=hf-deepspeed"}), 0);
  const LayerCost fused = cost_layer(llama_1b({"stack=deepspeed"}), 0);
  const OpTime& qkv = find(bf16, op_names::kAttnQkv);
  const OpTime& plain = find(fused, op_names::kAttnQkv);
  EXPECT_DOUBLE_EQ(qkv.fwd_bytes, plain.fwd_bytes);
  EXPECT_EQ(qkv.fwd_launches, plain.fwd_launches + 2);  // q_proj, k_proj, v_proj (separate_projections)
  EXPECT_DOUBLE_EQ(qkv.dgrad_bytes - plain.dgrad_bytes, 12 * kTokens * kHidden);
  EXPECT_DOUBLE_EQ(qkv.wgrad_bytes - plain.wgrad_bytes, 4 * kHidden * (kQ + 2 * kKv));
  // a layer's kernels: 32 forward, 69 backward (hardware/catalog/stacks/hf-deepspeed.yaml)
  EXPECT_EQ(layer_kernels(llama_1b({}).model, HfParams::bf16), std::make_pair(32, 69));
}

// transformers' LlamaAttention runs q_proj, k_proj, v_proj as three nn.Linear modules
// (stack.separate_projections in the hf-* presets): 1,024 tokens x 2,048 in, q 2,048 columns,
// k and v 512 each, each its own GEMM in every pass. hf-deepspeed's census already holds
// autograd's two adds of the three input grads (12 bytes an element); Liger's fused kernels
// have no census, so the sum is priced once: three 1,024 x 2,048 bf16 grads read, one written.
TEST(HfBf16Kernels, SeparateProjectionsPriceQkvAsThreeGemms) {
  const auto qkv_of = [](const LayerCost& c) { return find(c, op_names::kAttnQkv); };
  const auto gemm_s = [](const Scenario& s, double clock, std::int64_t m, std::int64_t n, std::int64_t k,
                         GemmPass pass) {
    ComputeOp c = gemm_op(Dtype::bf16, m, n, k);
    c.pass = pass, c.clock_scale = clock;
    return op_time_s(s.cluster.gpu, c);
  };
  for (const char* stack : {"stack=hf-deepspeed", "stack=hf-deepspeed-liger"}) {
    const Scenario s = llama_1b({stack});
    ASSERT_TRUE(s.stack.separate_projections) << stack;
    const LayerCost layer = cost_layer(s, 0);
    const OpTime qkv = qkv_of(layer);
    const double clock = layer.gemm_clock;
    EXPECT_NEAR(
        qkv.fwd_s,
        gemm_s(s, clock, 1024, 2048, 2048, GemmPass::fwd) + 2 * gemm_s(s, clock, 1024, 512, 2048, GemmPass::fwd), 1e-12)
        << stack;
    EXPECT_EQ(qkv.fwd_launches, 3) << stack;
  }
  // hf-deepspeed: the dgrads over their own inner widths, then the census's 2 adds, no other sum
  const Scenario hf = llama_1b({"stack=hf-deepspeed"});
  const OpTime hf_qkv = qkv_of(cost_layer(hf, 0));
  const OpTime one_gemm = qkv_of(cost_layer(llama_1b({"stack=hf-deepspeed", "stack.separate_projections=false"}), 0));
  EXPECT_EQ(hf_qkv.dgrad_launches, 3 + 2);
  EXPECT_EQ(one_gemm.dgrad_launches, 1 + 2);
  EXPECT_DOUBLE_EQ(hf_qkv.dgrad_bytes, one_gemm.dgrad_bytes);
  // Liger: the dgrads, then one pass summing them, 4 x 1,024 x 2,048 x 2 bytes
  const Scenario liger = llama_1b({"stack=hf-deepspeed-liger"});
  const LayerCost liger_layer = cost_layer(liger, 0);
  const OpTime liger_qkv = qkv_of(liger_layer);
  const double clock = liger_layer.gemm_clock;
  ComputeOp sum;
  sum.kind = ComputeKind::elementwise;
  sum.kernel = kernel_names::kResidual;
  sum.backward = true;
  sum.bytes = 4 * 1024 * 2048 * 2.0;
  EXPECT_NEAR(liger_qkv.dgrad_s,
              gemm_s(liger, clock, 1024, 2048, 2048, GemmPass::dgrad) +
                  2 * gemm_s(liger, clock, 1024, 2048, 512, GemmPass::dgrad) + op_time_s(liger.cluster.gpu, sum),
              1e-12);
  EXPECT_EQ(liger_qkv.dgrad_launches, 4);
  EXPECT_DOUBLE_EQ(liger_qkv.dgrad_bytes - hf_qkv.dgrad_bytes + 12 * kTokens * kHidden, 4 * kTokens * kHidden * 2);
}

TEST(HfBf16Memory, ASixteenBitModelWithAnFp32MasterAndHfsSavedTensors) {
  // Llama-3.2-1B, 16 layers, 1 x 1024 tokens, one GPU. A layer keeps 16 bytes per hidden
  // element, 4 per query and key/value element, 8 per FFN element, no weight copies; the head
  // 8 per hidden element and the fp32 log-softmax (4 per logit); the loss's backward two fp32
  // logit gradients on top (8 per logit)
  const Scenario s = llama_1b({"stack=hf-deepspeed"});
  const double vocab = kVocab;
  const double layer = 16 * kTokens * kHidden + 4 * kTokens * kQ + 4 * kTokens * kKv + 8 * kTokens * kFfn;
  const double head = 8 * kTokens * kHidden + 4 * kTokens * vocab;
  EXPECT_EQ(hf_eager_activation_bytes(s.model, s.plan, *s.training, 0, HfParams::bf16),
            static_cast<std::int64_t>(16 * layer + head + 8 * kTokens * vocab));
  // gradient checkpointing keeps each layer's bf16 input (2 bytes an element)
  const Scenario ckpt = llama_1b({"stack=hf-deepspeed", "plan.recompute=full"});
  EXPECT_EQ(hf_eager_activation_bytes(ckpt.model, ckpt.plan, *ckpt.training, 0, HfParams::bf16),
            static_cast<std::int64_t>(16 * 2 * kTokens * kHidden + head + std::max(layer, 8 * kTokens * vocab)));
  // bf16 parameters (2 bytes), the fp32 master and Adam's moments (12): DeepSpeed's bf16 engine
  const MemoryReport m = predict_memory(s);
  EXPECT_EQ(m.breakdown.params, static_cast<std::int64_t>(2 * kParams));
  EXPECT_EQ(m.breakdown.optimizer, static_cast<std::int64_t>(12 * kParams));
  EXPECT_EQ(m.breakdown.activations, hf_eager_activation_bytes(s.model, s.plan, *s.training, 0, HfParams::bf16));
}

// DeepSpeed's CPU offload of a bf16 model (the usual Hugging Face fine-tune): the fp32
// master and Adam's moments (12 bytes a parameter) leave the GPU for the host, the bf16
// parameters and HF's saved tensors stay; under ZeRO-3 the parameter shard may go too; the
// same split as the fused stacks'.
TEST(HfBf16Memory, OffloadMovesTheMasterMomentsAndParameterShardToTheHost) {
  const Scenario s = llama_1b({"stack=hf-deepspeed", "plan.offload_optimizer=true"});
  const MemoryReport m = predict_memory(s);
  EXPECT_EQ(m.breakdown.params, static_cast<std::int64_t>(2 * kParams));
  EXPECT_EQ(m.breakdown.optimizer, 0);
  EXPECT_EQ(m.host_bytes, static_cast<std::int64_t>(12 * kParams));
  EXPECT_EQ(m.breakdown.activations, predict_memory(llama_1b({"stack=hf-deepspeed"})).breakdown.activations);
  const MemoryReport fused = predict_memory(llama_1b({"stack=deepspeed", "plan.offload_optimizer=true"}));
  EXPECT_EQ(m.host_bytes, fused.host_bytes);
  EXPECT_EQ(m.breakdown.optimizer, fused.breakdown.optimizer);
  // ZeRO-3 with the parameter shard offloaded too (ZeRO-Infinity on the CPU, over 2 GPUs):
  // the bf16 shard (2 bytes a parameter) joins the master and moments on the host
  const std::vector<std::string> zero3 = {"plan.dp=2", "training.global_batch=2", "plan.zero=3",
                                          "plan.offload_optimizer=true", "plan.offload_params=true"};
  std::vector<std::string> hf = zero3, ds = zero3;
  hf.push_back("stack=hf-deepspeed"), ds.push_back("stack=deepspeed");
  const MemoryReport both = predict_memory(llama_1b(hf)), both_fused = predict_memory(llama_1b(ds));
  EXPECT_EQ(both.breakdown.params, 0);
  EXPECT_EQ(both.host_bytes, static_cast<std::int64_t>((12 + 2) * kParams / 2));
  EXPECT_EQ(both.host_bytes, both_fused.host_bytes);
  // autocast's fp32 model is not split so: refused
  test::expect_refused([](const std::string& sets) { return llama_1b(test::words(sets)); },
                       {{"plan.offload_optimizer=true", "autocast's fp32 model"},
                        {"plan.dp=2 training.global_batch=2 plan.zero=3 plan.offload_optimizer=true plan.offload_params=true",
                         "autocast's fp32 model"}});
}

TEST(HfBf16Kernels, RefusedWhereTheCensusDidNotCountNamingTheStack) {
  const auto build = [](const std::string& sets) { return llama_1b(test::words("stack=hf-deepspeed " + sets)); };
  test::expect_refused(build, {{"plan.tp=2", "(stack.layer_kernels hf_bf16"},
                               {"model.norm=layernorm", "(stack.layer_kernels hf_bf16"},
                               {"training.precision=fp32", "(the model's)"}});
}

// The catalog's Hugging Face configs (models/catalog/hf) under the stack: the dense RMSNorm /
// RoPE / SwiGLU families the census counted are accepted, the others refused naming the field.
TEST(HfEagerKernels, CatalogConfigsInAndOutOfTheCensus) {
  const auto load = [](const std::string& config, int seq) {
    return load_scenario_text("model: {hf_config: " + config + "}\ncluster: {preset: dgx-h100, nodes: 1}\n"
                              "training: {seq_len: " + std::to_string(seq) + ", global_batch: 8, micro_batch: 1, "
                              "precision: bf16}\nplan: {tp: 1, pp: 1, dp: 8, zero: 3, recompute: full}\nstack: hf-eager\n");
  };
  for (const char* config : {"llama-3.1-405b", "qwen2.5-72b", "qwen3-8b"}) EXPECT_NO_THROW(load(config, 4096)) << config;
  EXPECT_NO_THROW(load("mistral-7b", 4096));  // its 4,096-token window covers the sequence
  test::expect_refused(  // "config seq_len"
      [&](const std::string& c) { return load(c.substr(0, c.find(' ')), std::stoi(c.substr(c.find(' ') + 1))); },
      {{"mistral-7b 8192", "model.sliding_window"}, {"mixtral-8x7b-v0.1 4096", "model.moe"},
       {"deepseek-v3 4096", "model.moe"}, {"gpt2 1024", "model.norm"}});
}

TEST(HfEagerKernels, WhatTheCensusDidNotCountIsRefusedNamingTheField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"plan.tp=2", "plan.tp"},
      {"plan.pp=2 model.layers=16", "plan.pp"},
      {"training.precision=fp32", "training.precision"},
      {"model.norm=layernorm", "model.norm"},
      {"model.activation=gelu", "model.activation"},
      {"model.bias=true", "model.bias"},
      {"model.sliding_window=512", "model.sliding_window"},
      {"plan.dp=2 training.global_batch=2 plan.zero=1 plan.offload_optimizer=true", "plan.offload_optimizer"},
      {"plan.dp=2 training.global_batch=2 plan.gradient_compression=int8", "plan.gradient_compression"},
  };
  const auto build = [](const std::string& sets) { return llama_1b(test::words(sets)); };
  test::expect_refused(build, cases);  // naming the field
  std::vector<std::pair<std::string, std::string>> by_the_stack = cases;
  for (auto& c : by_the_stack) c.second = "(stack.layer_kernels hf_eager";  // and the stack that refuses it
  test::expect_refused(build, by_the_stack);
  EXPECT_NO_THROW(llama_1b({"plan.recompute=full"}));  // HF's gradient checkpointing
}

}  // namespace
}  // namespace twinsim
