#pragma once
// Activation memory of training: what the forward passes of the micro-batches in flight
// on a pipeline stage keep for their backward passes (Korthikanti et al. 2022, §4),
// summed op by op from models/layer_ops.
#include <cstdint>

#include "hardware/stack_spec.hpp"
#include "models/layer_ops.hpp"
#include "models/model_spec.hpp"
#include "models/plan.hpp"
#include "models/workload.hpp"

namespace twinsim {

// The dtype activations are kept in. fp8 training (Transformer Engine) still keeps
// activations between ops in bf16: only the layers' GEMMs run in fp8, their operands cast
// just before (priced with the GEMM: sim/training/layer_costs.cpp).
Dtype activation_dtype(Dtype precision);

// Per layer, per micro-batch, on one GPU.
struct LayerActivations {
  std::int64_t dense = 0, moe = 0;  // kept for backward under the plan's recompute policy
  // What recomputing one layer in backward brings back to life on top of what it keeps
  // (full: the layer's whole activations; selective: its attention scores).
  std::int64_t dense_recompute = 0, moe_recompute = 0;
  // The most one layer's backward holds at once on top of what the layer keeps: what
  // recomputation brings back plus the gradients in flight (layer_backward_bytes).
  std::int64_t dense_backward = 0, moe_backward = 0;
};

// One micro-batch of a training run as the layers see it: its activations in the 16-bit type
// of training.precision, under fp8 the GEMMs' inputs kept in fp8, and the stack's MoE
// probabilities where its experts apply them (MicroBatchShape).
MicroBatchShape training_shape(const TrainingWorkload& training, const StackSpec& stack);

LayerActivations layer_activations(const ModelSpec& model, const Plan& plan, const MicroBatchShape& shape);

// One layer's backward on top of what the layer keeps, with PyTorch autograd's lifetimes
// (a gradient exists from the op that produces it until its last consumer has run; a
// node's saved tensors are freed once the node has run), as Megatron's layer runs it:
//   MLP  (down, act, up):  dy + max(dy_sp + d(down input),         at down's dgrad
//                                   d(up outputs),                 at the activation's
//                                                                  (its input grad replaces it)
//                                   d(up input) - down input)      at up's dgrad
//   attention:             dy + max(dy_sp + dO,                    at proj's dgrad
//                                   dO + dQ + dK + dV (+ dP),      at the core's backward
//                                   d(qkv input) - O)              at qkv's dgrad
// dy is the grad of the layer's output [s, b, h] (/ t with SP), dy_sp its all-gather
// with SP (g-bar's backward), d(up/qkv input) the column-parallel GEMM's input grad
// [s, b, h] before f's all-reduce / g's reduce-scatter; dP, the probabilities' grad, only
// without flash attention (Megatron's fused softmax backward then works in place). The
// MLP's point holds the whole layer (recomputed under full recompute); the attention's
// comes after the MLP's saved tensors are gone and, under selective recompute, holds the
// recomputed core's output O besides its scores (Megatron's checkpoint recomputes both).
std::int64_t layer_backward_bytes(const ModelSpec& model, std::int64_t layer, const Plan& plan,
                                  const MicroBatchShape& shape);

// What the last stage's head adds in its backward on top of what it keeps: the output
// layer's input grad [s, b, h] (full sequence: the SP reduce-scatter comes after), next
// to the logits, whose grads the cross entropy writes in place (Megatron's
// _VocabParallelCrossEntropy.backward).
std::int64_t head_backward_bytes(const ModelSpec& model, const Plan& plan, const MicroBatchShape& shape);

// cross_entropy(logits.float()) in eager PyTorch (stack.loss_kernel eager_fp32, and Hugging
// Face's loss in the hf censuses), per logit on this GPU: log_softmax keeps its fp32 output
// (4 bytes, the kept logits), and its backward holds nll_loss's fp32 gradient (4) and its own
// input's (4) beside it: 8 bytes a logit on top of what the head keeps. Its forward holds the
// 16-bit logits (2), their fp32 copy (4) and the output: 6 beyond the kept 4; vocabulary-
// parallel (TP's loss_parallel: torch/distributed/tensor/parallel/loss.py _log_softmax) it
// also holds `shifted = x - max` and exp(shifted), fp32 each: 14 in all, 10 beyond the kept.
// Its backward is one function, _nll_loss_and_log_softmax_backward (the same file, torch
// 1963fc8, 2024-12), which returns (grad_input + torch.exp(x)) * grad_output: grad_input (the
// fp32 zeros_like(x) with the -1s), exp(x) and their sum held at once beside the kept x, then
// the product beside grad_input and the sum: 12 beyond the kept, over the forward's 10.
inline constexpr double kEagerFp32LossBackwardBytesPerLogit = 8;
inline constexpr double kEagerFp32LossParallelForwardBytesPerLogit = 10;
inline constexpr double kEagerFp32LossParallelBackwardBytesPerLogit = 12;
// The most the loss holds at once beyond its kept output, forward or backward.
std::int64_t eager_fp32_loss_transient_bytes(std::int64_t logits, bool vocab_parallel);

// PyTorch's ring attention backward (stack.cp_exchange: torch_all_gather; torch/distributed/
// tensor/experimental/_attention.py, _templated_ring_attention_backward, 2024-12) on top of the
// layer's own backward, with N a rank's Q (or K, V) elements as SDPA takes them (heads x
// head_dim after repeat_kv, the rank's tokens): the all-gathered K,V (_AllGatherRotater, cp x 2N
// in 16 bits), the step's K,V concatenation (2N, 16 bits), the fp32 dQ accumulator (4N bytes),
// and the fp32 dK,dV three times (the received buffer the accumulators view, the next
// torch.cat and the all-to-all's output, 8N bytes each): (4cp + 32) N bytes with 16-bit
// activations; 0 without CP or with the ring exchange (whose chunks are buffers).
std::int64_t torch_cp_backward_bytes(const ModelSpec& model, const Plan& plan, const StackSpec& stack,
                                     const MicroBatchShape& shape);

// Model chunks whose forward activations stage `stage` holds at its peak (micro-batches
// when there is one chunk per stage):
//   GPipe: all m (Huang et al. 2019);  1F1B: min(pp - stage, m) (Narayanan et al. 2021 §2.2.1);
//   interleaved: Megatron's warm-up (pp - stage - 1) * 2 + (v - 1) * pp, plus the one in
//   flight, at most m * v, each chunk of layers / (pp * v) layers (§2.2.2; this gives
//   the first stage Korthikanti §4.2.3's factor 1 + (p - 1) / (p v)). With the EP
//   all-to-all overlap (plan.moe_a2a_overlap) one chunk more: its warm-up runs one forward
//   more (Megatron-core schedules.py, num_warmup_microbatches += 1), at most m * v.
std::int64_t chunks_in_flight(const Plan& plan, int stage, std::int64_t micro_batches);

// The first stage's extra per micro-batch: the embedding's dropout mask, sbh/t with SP
// (Korthikanti §4.3; the embedding output is the first layer's input, counted there).
std::int64_t embedding_activation_bytes(const ModelSpec& model, const Plan& plan, const MicroBatchShape& shape);

// The last stage's extra per micro-batch (Korthikanti §4.3): final-norm input and output
// layer input (2sbh/t each with SP) and fp32 logits for the cross-entropy, 4sbv/t; and
// each multi-token-prediction module's. Under the stack's fused linear cross-entropy no
// logits are kept: the forward has computed the output layer's input gradient (sbh, in the
// output layer input's place) and its weight gradient (vh, the weight's dtype), which it
// keeps for the backward. `moe_layer_kept`: what one MoE layer keeps (the MTP block is one;
// LayerActivations::moe), or -1 to build its ops here.
std::int64_t output_activation_bytes(const ModelSpec& model, const Plan& plan, const StackSpec& stack,
                                     const MicroBatchShape& shape, std::int64_t moe_layer_kept = -1);

// plan.offload_activations_layers: what the first N layers of the (one) stage keep for their
// backward, held in CPU memory instead. training_activation_bytes keeps the rest on the GPU,
// and one offloaded layer more when only one layer follows them (its copy is still in flight
// at the forward's end; Transformer Engine's double buffer holds two in the backward).
std::int64_t offloaded_activation_bytes(const ModelSpec& model, const Plan& plan, const LayerActivations& per_layer);

// What a stage keeps besides its layers' activations at its peak: the embedding's extras
// of the micro-batches in flight on the first stage, the head's on the last.
std::int64_t stage_extra_activation_bytes(const ModelSpec& model, const Plan& plan, const StackSpec& stack,
                                          const TrainingWorkload& training, int stage, std::int64_t moe_layer_kept = -1);

// The stage's first backward on top of everything the stage keeps: on the last stage the
// larger of the head's backward and the last layer's (by which time the head's tensors
// of that micro-batch are gone); elsewhere the last layer's. `layer_backward` is
// LayerActivations' *_backward of the stage's layers (the larger of dense and MoE).
std::int64_t stage_backward_bytes(const ModelSpec& model, const Plan& plan, const StackSpec& stack,
                                  const TrainingWorkload& training, std::int64_t layer_backward, bool has_layers,
                                  int stage, std::int64_t moe_layer_kept = -1);

// All activation memory of stage `stage` at its peak, on one GPU: what the micro-batches
// in flight keep + the stage extras + the first backward's working set.
std::int64_t training_activation_bytes(const ModelSpec& model, const Plan& plan, const StackSpec& stack,
                                       const TrainingWorkload& training, const LayerActivations& per_layer,
                                       int stage);

}  // namespace twinsim
