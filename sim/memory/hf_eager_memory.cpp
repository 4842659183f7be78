#include "sim/memory/hf_eager_memory.hpp"

#include <algorithm>

#include "models/hf_eager_census.hpp"
#include "models/litgpt_census.hpp"
#include "sim/memory/activations.hpp"
#include "sim/memory/stage_layers.hpp"
#include "sim/memory/weights.hpp"

namespace twinsim {

namespace {

// The census's saved bytes of a layer (head = false) or of the head, for one micro-batch.
double saved_bytes(const ModelSpec& model, const EagerExtents& e, bool head, HfParams params) {
  double bytes = 0;
  for (const EagerSaved& s : hf_eager_saved(params))
    if (s.head == head && applies(s.variant, model))
      bytes += s.bytes_per_element * e.of(s.extent, head ? e.head_weights : e.layer_weights);
  return bytes;
}

// What the stage keeps, given what one layer keeps (`layer`) and the census's head.
std::int64_t stage_activation_bytes(const ModelSpec& model, const Plan& plan, const TrainingWorkload& t, int stage,
                                    HfParams params, double layer) {
  const EagerExtents e = eager_extents(model, {t.micro_batch, t.seq_len, activation_dtype(t.precision)});
  const double layers = static_cast<double>(stage_layers(model, plan, stage).total());
  // gradient checkpointing keeps each layer's input (the residual stream: fp32 under
  // autocast, bf16 on a bf16 model) and brings one layer's saved tensors back at a time in
  // the backward
  const bool checkpointed = plan.recompute == Recompute::full;
  const double stream_bytes = params == HfParams::bf16 ? 2 : 4;
  double kept = layers * (checkpointed ? stream_bytes * e.hidden : layer);
  double backward = checkpointed ? layer : 0;
  // op-level checkpointing (torchtitan's policy on its eager Llama, which runs these same
  // kernels) keeps what the policy saves, the op list's count, and rebuilds one layer at a time
  if (plan.recompute == Recompute::selective_op) {
    kept = layers * static_cast<double>(
                        layer_activations(model, plan, {t.micro_batch, t.seq_len, activation_dtype(t.precision)}).dense);
    backward = layer;
  }
  if (stage == plan.pp - 1) {
    kept += saved_bytes(model, e, true, params);
    // HF's loss: logits.float(), then cross_entropy (stack.loss_kernel eager_fp32's bytes)
    backward = std::max(backward, kEagerFp32LossBackwardBytesPerLogit * e.vocab);
  }
  return static_cast<std::int64_t>(kept + backward);
}

}  // namespace

std::int64_t hf_eager_activation_bytes(const ModelSpec& model, const Plan& plan, const TrainingWorkload& t, int stage,
                                       HfParams params) {
  const EagerExtents e = eager_extents(model, {t.micro_batch, t.seq_len, activation_dtype(t.precision)});
  return stage_activation_bytes(model, plan, t, stage, params, saved_bytes(model, e, false, params));
}

std::int64_t litgpt_activation_bytes(const ModelSpec& model, const Plan& plan, const TrainingWorkload& t, int stage) {
  const double layer = static_cast<double>(litgpt_lora_layer_saved_bytes(model, t.micro_batch * t.seq_len, *t.lora));
  return stage_activation_bytes(model, plan, t, stage, HfParams::bf16, layer);
}

StageMemory hf_eager_training_stage(const ModelSpec& model, const Plan& plan, const TrainingWorkload& t, int stage,
                                    std::int64_t buffer_bytes, const StackSpec& stack, const GpuSpec& gpu) {
  const HfParams params = hf_params(stack);
  // torch.amp keeps the model in fp32: an fp32 run's bytes per parameter (no master copy);
  // autocast's 16-bit copies are counted with the activations. A bf16 model: the 16-bit
  // model and the optimizer's fp32 master, as any mixed-precision run
  const WeightMemory w = params == HfParams::bf16 ? training_weight_memory(model, plan, stack, gpu, t, stage)
                                                  : zero_sharded(stage_params(model, plan, stage).total(),
                                                                 training_bytes_per_param(Dtype::fp32, t.optimizer),
                                                                 plan.zero, plan.zero_shard_group_size());
  MemoryBreakdown forward_end;
  forward_end.params = w.params;
  forward_end.optimizer = w.optimizer;
  forward_end.buffers = buffer_bytes;
  forward_end.activations = stack.litgpt() ? litgpt_activation_bytes(model, plan, t, stage)
                                           : hf_eager_activation_bytes(model, plan, t, stage, params);
  if (t.micro_batches(plan.dp) > 1) forward_end.grads = w.grads;  // accumulating into them
  MemoryBreakdown backward_end = forward_end;
  backward_end.activations = 0;
  backward_end.grads = w.grads;
  const MemoryBreakdown& peak = forward_end.total() >= backward_end.total() ? forward_end : backward_end;
  return {stage, peak.total(), peak, 0, {}, {}};
}

}  // namespace twinsim
