#include "sim/memory/activations.hpp"

#include <algorithm>

#include "models/checked_math.hpp"
#include "sim/memory/stage_layers.hpp"

namespace twinsim {

Dtype activation_dtype(Dtype precision) {
  switch (precision) {
    case Dtype::fp32:
    case Dtype::tf32: return Dtype::fp32;
    case Dtype::fp16: return Dtype::fp16;
    default: return Dtype::bf16;
  }
}

namespace {

std::int64_t kept_bytes(const ModelSpec& m, std::int64_t layer, const Plan& plan, const MicroBatchShape& shape) {
  return saved_bytes(build_layer_ops(m, layer, plan, shape));
}

bool is_interleaved(const Plan& plan) {
  return plan.schedule == Schedule::interleaved && plan.virtual_stages > 1;
}

// Sequence-parallel divisor of tensors outside the TP region.
std::int64_t sp_divisor(const Plan& plan) { return plan.sequence_parallel ? plan.tp : 1; }

std::int64_t local_tokens(const Plan& plan, const MicroBatchShape& shape) {
  return checked_mul(shape.micro_batch, shape.seq_len) / plan.cp;
}

}  // namespace

LayerActivations layer_activations(const ModelSpec& model, const Plan& plan, const MicroBatchShape& shape) {
  Plan no_recompute = plan;
  no_recompute.recompute = Recompute::none;
  LayerActivations a;
  const std::int64_t dense = some_dense_layer(model);
  a.dense = kept_bytes(model, dense, plan, shape);
  if (plan.recompute != Recompute::none)
    a.dense_recompute = kept_bytes(model, dense, no_recompute, shape) - a.dense;
  if (model.moe) {
    const std::int64_t moe = some_moe_layer(model);
    a.moe = kept_bytes(model, moe, plan, shape);
    if (plan.recompute != Recompute::none) a.moe_recompute = kept_bytes(model, moe, no_recompute, shape) - a.moe;
  }
  return a;
}

std::int64_t chunks_in_flight(const Plan& plan, int stage, std::int64_t micro_batches) {
  const std::int64_t m = std::max<std::int64_t>(1, micro_batches);
  if (plan.schedule == Schedule::gpipe) return m;
  if (!is_interleaved(plan)) return std::min<std::int64_t>(plan.pp - stage, m);
  const std::int64_t v = plan.virtual_stages;
  const std::int64_t warmup = static_cast<std::int64_t>(plan.pp - stage - 1) * 2 + (v - 1) * plan.pp;
  return std::min(warmup + 1, m * v);
}

std::int64_t embedding_activation_bytes(const ModelSpec& model, const Plan& plan, const MicroBatchShape& shape) {
  if (model.dropout <= 0) return 0;
  return checked_mul(local_tokens(plan, shape), model.hidden) / sp_divisor(plan);  // 1-byte mask
}

std::int64_t output_activation_bytes(const ModelSpec& model, const Plan& plan, const MicroBatchShape& shape) {
  const std::int64_t tokens = local_tokens(plan, shape);
  const std::int64_t stream = dtype_bytes(shape.dtype, checked_mul(tokens, model.hidden)) / sp_divisor(plan);
  const std::int64_t logits = checked_mul(checked_mul(tokens, model.vocab) / plan.tp, 4);
  return 2 * stream + logits;
}

std::int64_t training_activation_bytes(const ModelSpec& model, const Plan& plan,
                                       const TrainingWorkload& training, const LayerActivations& per_layer,
                                       int stage) {
  const MicroBatchShape shape{training.micro_batch, training.seq_len, activation_dtype(training.precision)};
  const std::int64_t m = std::max<std::int64_t>(1, training.micro_batches(plan.dp));
  const StageLayers layers = stage_layers(model, plan, stage);
  const std::int64_t v = is_interleaved(plan) ? plan.virtual_stages : 1;
  // All chunks of a stage hold the same layers on average: bytes of the stage's layers
  // per micro-batch, times chunks in flight, over the chunks per stage.
  const std::int64_t per_microbatch =
      checked_add(checked_mul(layers.dense, per_layer.dense), checked_mul(layers.moe, per_layer.moe));
  std::int64_t bytes = checked_mul(per_microbatch, chunks_in_flight(plan, stage, m)) / v;
  // The first stage holds the embedding output of as many micro-batches as 1F1B keeps
  // there (Korthikanti §4.3 multiplies by p); the last stage the logits of one (GPipe: all).
  const std::int64_t first_in_flight = plan.schedule == Schedule::gpipe ? m : std::min<std::int64_t>(plan.pp, m);
  const std::int64_t last_in_flight = plan.schedule == Schedule::gpipe ? m : 1;
  if (stage == 0) bytes += checked_mul(embedding_activation_bytes(model, plan, shape), first_in_flight);
  if (stage == plan.pp - 1) bytes += checked_mul(output_activation_bytes(model, plan, shape), last_in_flight);
  // Backward recomputes one layer at a time; its working set comes on top.
  std::int64_t recompute = 0;
  if (layers.dense > 0) recompute = per_layer.dense_recompute;
  if (layers.moe > 0) recompute = std::max(recompute, per_layer.moe_recompute);
  return checked_add(bytes, recompute);
}

}  // namespace twinsim
