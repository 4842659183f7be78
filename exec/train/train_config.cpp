#include "exec/train/train_config.hpp"

#include <numeric>
#include <string>
#include <utility>

#include "models/optimizer_state.hpp"
#include "scenario/errors.hpp"

namespace twinsim::exec {

namespace {

// What the executor does not run: a ScenarioError naming the key, the value and the rule, so
// `twinsim run` exits 2 as for any scenario key it refuses (docs/scenario/command-line.md).
[[noreturn]] void refuse(std::string key, std::string value, std::string rule) {
  throw ScenarioError(std::move(key), std::move(value), std::move(rule));
}

// LoRA as the executor runs it (exec/model/lora_linear.hpp): adapters on one TP rank beside
// dense layers, the frozen base stored as training.precision stores every weight.
void validate_lora(const TrainConfig& c) {
  if (c.plan.tp != 1)
    refuse("plan.tp", std::to_string(c.plan.tp),
           "is not run with training.lora: the executor runs its adapters with plan.tp=1 (not split over TP)");
  if (c.model.moe || c.model.mla)
    refuse("training.lora", "",
           std::string("the executor adapts dense attention and MLP layers; this model has ") +
               (c.model.moe ? "experts (model.moe)" : "latent attention (model.mla)"));
  // the optimizer keeps states for the adapters alone (zero.cpp optimizer_spans); its offloaded
  // update copies whole shares back and forth
  if (c.plan.offload_optimizer)
    refuse("plan.offload_optimizer", "true", "is not run with training.lora (the executor runs it without offload)");
  const LoraBase base = c.training.lora->base;
  if (base != LoraBase::bf16 && base != LoraBase::fp16)
    refuse("training.lora.base", std::string(to_string(base)),
           "is not run by the executor: it keeps the frozen base as training.precision keeps weights (bf16 or fp16)");
}

// Hybrid sharding as the executor runs it (zero.hpp): ZeRO 1-3 over one shard group of the
// dense data-parallel ranks, the shard's grads summed over its replicas in full precision.
void validate_dp_replicate(const Plan& p) {
  const auto refuse_replicate = [&p](const std::string& rule) {
    refuse("plan.dp_replicate", std::to_string(p.dp_replicate), rule);
  };
  if (p.dp % p.dp_replicate != 0)
    refuse_replicate("must divide plan.dp=" + std::to_string(p.dp) + " (equal shard groups)");
  if (!p.shards_optimizer())
    refuse_replicate("needs plan.zero 1, 2 or 3 (hybrid sharding splits ZeRO's shard groups); plan.zero=" +
                     std::to_string(p.zero));
  if (p.ep != 1 || p.etp() != p.tp)
    refuse_replicate("is not run with plan.ep=" + std::to_string(p.ep) + " (expert_tp=" + std::to_string(p.etp()) +
                     "): the executor has no shard/replicate split of the experts' own data-parallel group");
  if (p.gradient_compression != GradCompression::none)
    refuse_replicate("is not run with plan.gradient_compression=" + std::string(to_string(p.gradient_compression)) +
                     ": the executor sums the replicas' shards in full precision only");
  if (p.offload_optimizer)
    refuse_replicate(
        "is not run with plan.offload_optimizer=true (ZeRO-Offload is DeepSpeed's, which has no "
        "hybrid sharding of this kind)");
}

// The parallel layout: no context parallelism; experts folded inside the TP groups; the
// gpipe and 1f1b schedules.
void validate_layout(const Plan& p, const ModelSpec& model) {
  if (p.cp != 1) refuse("plan.cp", std::to_string(p.cp), "is not run: the executor has no context parallelism yet");
  if (p.ep != 1 && !model.moe)
    refuse("plan.ep", std::to_string(p.ep), "needs a model with experts (model.moe) for expert parallelism");
  // MoE parallel folding (process_groups.hpp): the experts' ep x expert_tp groups tile a
  // stage's tp x cp x dp ranks; the executor's expert TP groups lie inside the TP groups
  if (p.tp % p.etp() != 0)
    refuse("plan.expert_tp", std::to_string(p.expert_tp),
           "must divide plan.tp=" + std::to_string(p.tp) + " in the executor");
  const std::int64_t stage_ranks = static_cast<std::int64_t>(p.tp) * p.dp * p.cp;
  if (stage_ranks % (static_cast<std::int64_t>(p.ep) * p.etp()) != 0)
    refuse("plan.ep", std::to_string(p.ep),
           "times expert_tp=" + std::to_string(p.etp()) + " must divide tp * dp * cp = " + std::to_string(stage_ranks));
  // PowerSGD factors a block's matrices whole; under EP a layer's experts are reduced apart
  if ((p.ep != 1 || p.etp() != p.tp) && p.gradient_compression == GradCompression::powersgd)
    refuse("plan.gradient_compression", "powersgd",
           "is not run with plan.ep=" + std::to_string(p.ep) + " (expert_tp=" + std::to_string(p.etp()) +
               "): the executor's PowerSGD factors whole blocks, and expert parallelism reduces each layer's "
               "experts apart (use int8, int4 or topk)");
  if (p.schedule == Schedule::interleaved || p.schedule == Schedule::dualpipe)
    refuse("plan.schedule", std::string(to_string(p.schedule)), "is not run by the executor (it runs gpipe and 1f1b)");
}

// Gradient compression: ZeRO 0-1's reduction only, never under fp16's loss scaling.
void validate_compression(const TrainConfig& c) {
  const GradCompression g = c.plan.gradient_compression;
  if (g == GradCompression::none) return;
  if (c.plan.shards_grads())
    refuse("plan.gradient_compression", std::string(to_string(g)),
           "is not run with plan.zero=" + std::to_string(c.plan.zero) +
               ": the executor compresses ZeRO 0-1's reduction only");
  if (c.training.precision == Dtype::fp16)
    refuse("plan.gradient_compression", std::string(to_string(g)),
           "is not run with training.precision=fp16 (its residual would carry the loss scale of the step that "
           "made it); use bf16 or fp32");
}

// Offload: the optimizer's states, and activations on one stage without recomputation.
void validate_offload(const Plan& p) {
  if (p.offload_params)
    refuse("plan.offload_params", "true",
           "is not run: the executor offloads the optimizer only (ZeRO-Infinity's parameter offload is priced by "
           "the simulator only)");
  if (p.offload_device != OffloadDevice::cpu && !p.offload_optimizer)
    refuse("plan.offload_device", std::string(to_string(p.offload_device)),
           "needs plan.offload_optimizer=true: the executor swaps the offloaded optimizer's states");
  // activation offload as the simulator prices it (scenario/validate.cpp): one stage, one
  // micro-batch's layers in flight, nothing recomputed
  if (p.offload_activations_layers > 0 && (p.pp != 1 || p.recompute != Recompute::none))
    refuse("plan.offload_activations_layers", std::to_string(p.offload_activations_layers),
           "is run by the executor with plan.pp=1 and plan.recompute=none only (plan.pp=" + std::to_string(p.pp) +
               ", plan.recompute=" + std::string(to_string(p.recompute)) + ")");
}

// Keys that change the numbers, not only the time, which the simulator alone prices.
void validate_priced_only(const Plan& p) {
  if (p.zero_hpz_partition_size > 1)
    refuse("plan.zero_hpz_partition_size", std::to_string(p.zero_hpz_partition_size),
           "is not run: the executor keeps no secondary partition (ZeRO++ is priced by the simulator only)");
  if (p.zero_quantized_weights || p.zero_quantized_gradients)
    refuse(p.zero_quantized_weights ? "plan.zero_quantized_weights" : "plan.zero_quantized_gradients", "true",
           "is not run: the executor's collectives run in full precision (ZeRO++ is priced by the simulator only)");
  if (p.fp8_activation_input || p.fp8_attention)
    refuse(p.fp8_attention ? "plan.fp8_attention" : "plan.fp8_activation_input", "true",
           "is not run: the executor keeps its activations in the training precision (priced by the simulator only)");
  if (p.fp8_moe_act_cache)
    refuse("plan.fp8_moe_act_cache", "true",
           "is not run: the executor keeps its activations in the training precision (priced by the simulator only)");
  if (optimizer_state_dtypes(p).precision_aware()) {
    const auto [key, value] = precision_aware_key(p);
    refuse(key, value,
           "is not run by the executor: it keeps Adam's moments and masters in fp32 (the precision-aware optimizer "
           "is priced by the simulator only)");
  }
}

}  // namespace

void validate(const TrainConfig& c) {
  validate_layout(c.plan, c.model);
  if (c.plan.dp_replicate > 1) validate_dp_replicate(c.plan);
  validate_compression(c);
  validate_offload(c.plan);
  validate_priced_only(c.plan);
  if (c.micro_batches() < 1 || c.training.global_batch % (c.training.micro_batch * c.plan.dp) != 0)
    refuse("training.global_batch", std::to_string(c.training.global_batch),
           "is not a multiple of training.micro_batch * plan.dp = " + std::to_string(c.training.micro_batch) + " * " +
               std::to_string(c.plan.dp));
  if (c.training.lora) validate_lora(c);
  const Dtype p = c.training.precision;
  if (p != Dtype::fp32 && p != Dtype::bf16 && p != Dtype::fp16)
    refuse("training.precision", std::string(to_string(p)), "is not run by the executor (it runs fp32, bf16, fp16)");
}

TransformerConfig stage_config(const TrainConfig& c, const RankCoords& coords) {
  TransformerConfig t;
  t.model = c.model;
  t.tp = c.plan.tp;
  t.tp_rank = coords.tp;
  t.ep = c.plan.ep;
  t.ep_rank = coords.ep;
  t.expert_tp = c.plan.expert_tp;
  t.sequence_parallel = c.plan.sequence_parallel && c.plan.tp > 1;
  t.flash_attention = c.plan.flash_attention;
  t.recompute = c.plan.recompute;
  t.offload_layers = c.plan.offload_activations_layers;
  t.micro_batch = static_cast<int>(c.training.micro_batch);
  t.seq_len = static_cast<int>(c.training.seq_len);
  std::vector<int> layers = c.plan.stage_layers;
  if (layers.empty()) layers.assign(c.plan.pp, static_cast<int>(c.model.layers / c.plan.pp));
  t.first_layer = std::accumulate(layers.begin(), layers.begin() + coords.pp, 0);
  t.end_layer = t.first_layer + layers[coords.pp];
  t.has_embedding = coords.pp == 0;
  t.has_head = coords.pp == c.plan.pp - 1;
  t.seed = c.seed;
  t.init_std = c.init_std;
  t.storage = c.training.precision;  // validated: fp32, bf16 or fp16
  t.lora = c.training.lora;
  return t;
}

}  // namespace twinsim::exec
