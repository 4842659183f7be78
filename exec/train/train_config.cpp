#include "exec/train/train_config.hpp"

#include <numeric>
#include <stdexcept>
#include <string>

#include "models/optimizer_state.hpp"
#include "scenario/errors.hpp"

namespace twinsim::exec {

namespace {

// LoRA as the executor runs it (exec/model/lora_linear.hpp): adapters on one TP rank beside
// dense layers, the frozen base stored as training.precision stores every weight.
void validate_lora(const TrainConfig& c) {
  if (c.plan.tp != 1)
    throw std::invalid_argument(
        "plan.tp=" + std::to_string(c.plan.tp) +
        ": the executor runs training.lora with plan.tp=1 (its adapters are not split over TP)");
  if (c.model.moe || c.model.mla)
    throw std::invalid_argument(std::string("training.lora: the executor adapts dense attention and MLP layers; this "
                                            "model has ") +
                                (c.model.moe ? "experts (model.moe)" : "latent attention (model.mla)"));
  // the optimizer keeps states for the adapters alone (zero.cpp optimizer_spans); its offloaded
  // update copies whole shares back and forth
  if (c.plan.offload_optimizer)
    throw std::invalid_argument(
        "plan.offload_optimizer=true: the executor runs training.lora without optimizer offload");
  const LoraBase base = c.training.lora->base;
  if (base != LoraBase::bf16 && base != LoraBase::fp16)
    throw std::invalid_argument(
        "training.lora.base=" + std::string(to_string(base)) +
        ": the executor keeps the frozen base as training.precision keeps weights (bf16 or fp16)");
}

// Hybrid sharding as the executor runs it (zero.hpp): ZeRO 1-3 over one shard group of the
// dense data-parallel ranks, the shard's grads summed over its replicas in full precision.
void validate_dp_replicate(const Plan& p) {
  const std::string key = "plan.dp_replicate=" + std::to_string(p.dp_replicate);
  if (p.dp % p.dp_replicate != 0)
    throw std::invalid_argument(key + ": must divide plan.dp=" + std::to_string(p.dp) + " (equal shard groups)");
  if (!p.shards_optimizer())
    throw std::invalid_argument(key + ": hybrid sharding splits ZeRO's shard groups; it needs plan.zero 1, 2 or 3");
  if (p.ep != 1 || p.etp() != p.tp)
    throw std::invalid_argument(key + " with plan.ep=" + std::to_string(p.ep) +
                                ": the executor has no shard/replicate split of the experts' own data-parallel group");
  if (p.gradient_compression != GradCompression::none)
    throw std::invalid_argument(key +
                                " with plan.gradient_compression: the executor sums the replicas' shards in "
                                "full precision only");
  if (p.offload_optimizer)
    throw std::invalid_argument(key +
                                " with plan.offload_optimizer: not run (ZeRO-Offload is DeepSpeed's, which has "
                                "no hybrid sharding of this kind)");
}

}  // namespace

void validate(const TrainConfig& c) {
  if (c.plan.cp != 1) throw std::invalid_argument("plan.cp=" + std::to_string(c.plan.cp) + ": the executor has no context parallelism yet");
  if (c.plan.ep != 1 && !c.model.moe)
    throw std::invalid_argument("plan.ep=" + std::to_string(c.plan.ep) + ": expert parallelism needs a model with experts (model.moe)");
  // MoE parallel folding (process_groups.hpp): the experts' ep x expert_tp groups tile a
  // stage's tp x cp x dp ranks; the executor's expert TP groups lie inside the TP groups
  if (c.plan.tp % c.plan.etp() != 0)
    throw std::invalid_argument("plan.expert_tp=" + std::to_string(c.plan.expert_tp) +
                                ": the executor needs an expert TP that divides plan.tp=" + std::to_string(c.plan.tp));
  const std::int64_t stage_ranks = static_cast<std::int64_t>(c.plan.tp) * c.plan.dp * c.plan.cp;
  if (stage_ranks % (static_cast<std::int64_t>(c.plan.ep) * c.plan.etp()) != 0)
    throw std::invalid_argument("plan.ep=" + std::to_string(c.plan.ep) +
                                ": ep * expert_tp must divide tp * dp * cp = " + std::to_string(stage_ranks));
  // PowerSGD factors a block's matrices whole; under EP a layer's experts are reduced apart
  if ((c.plan.ep != 1 || c.plan.etp() != c.plan.tp) && c.plan.gradient_compression == GradCompression::powersgd)
    throw std::invalid_argument("plan.ep=" + std::to_string(c.plan.ep) + " (expert_tp=" + std::to_string(c.plan.etp()) +
                                ") with plan.gradient_compression=powersgd: the executor's PowerSGD factors whole "
                                "blocks, and expert parallelism reduces each layer's experts apart (use int8, int4 "
                                "or topk)");
  if (c.plan.schedule == Schedule::interleaved || c.plan.schedule == Schedule::dualpipe)
    throw ScenarioError("plan.schedule", std::string(to_string(c.plan.schedule)),
                        "is not run by the executor (it runs gpipe and 1f1b)");
  // quantised collectives change the numbers, not only the time: not run in full precision
  if (c.plan.zero_hpz_partition_size > 1)
    throw std::invalid_argument("plan.zero_hpz_partition_size=" + std::to_string(c.plan.zero_hpz_partition_size) +
                                ": the executor keeps no secondary partition (ZeRO++ is priced by the simulator only)");
  if (c.plan.dp_replicate > 1) validate_dp_replicate(c.plan);
  if (c.plan.gradient_compression != GradCompression::none && c.plan.shards_grads())
    throw std::invalid_argument("plan.gradient_compression=" + std::string(to_string(c.plan.gradient_compression)) +
                                ": the executor compresses ZeRO 0-1's reduction only (plan.zero=" +
                                std::to_string(c.plan.zero) + ")");
  if (c.plan.gradient_compression != GradCompression::none && c.training.precision == Dtype::fp16)
    throw std::invalid_argument("plan.gradient_compression=" + std::string(to_string(c.plan.gradient_compression)) +
                                ": not with fp16 in the executor (its residual would carry the loss scale of the step "
                                "that made it); use bf16 or fp32");
  if (c.plan.offload_params)
    throw std::invalid_argument("plan.offload_params=true: the executor offloads the optimizer only (ZeRO-Infinity's "
                                "parameter offload is priced by the simulator only)");
  if (c.plan.offload_device != OffloadDevice::cpu && !c.plan.offload_optimizer)
    throw std::invalid_argument("plan.offload_device=" + std::string(to_string(c.plan.offload_device)) +
                                ": the executor swaps the offloaded optimizer's states (plan.offload_optimizer=true)");
  // activation offload as the simulator prices it (scenario/validate.cpp): one stage, one
  // micro-batch's layers in flight, nothing recomputed
  if (c.plan.offload_activations_layers > 0 && (c.plan.pp != 1 || c.plan.recompute != Recompute::none))
    throw std::invalid_argument("plan.offload_activations_layers=" + std::to_string(c.plan.offload_activations_layers) +
                                ": the executor offloads activations with plan.pp=1 and plan.recompute=none only");
  if (c.plan.zero_quantized_weights || c.plan.zero_quantized_gradients)
    throw std::invalid_argument(std::string(c.plan.zero_quantized_weights ? "plan.zero_quantized_weights"
                                                                          : "plan.zero_quantized_gradients") +
                                "=true: the executor's collectives run in full precision (ZeRO++ is priced by the "
                                "simulator only)");
  if (c.plan.fp8_activation_input || c.plan.fp8_attention)
    throw std::invalid_argument(std::string(c.plan.fp8_attention ? "plan.fp8_attention" : "plan.fp8_activation_input") +
                                "=true: the executor keeps its activations in the training precision (priced by the "
                                "simulator only)");
  if (c.plan.fp8_moe_act_cache)
    throw ScenarioError("plan.fp8_moe_act_cache", "true",
                        "is not run by the executor: it keeps its activations in the training precision (priced "
                        "by the simulator only)");
  if (optimizer_state_dtypes(c.plan).precision_aware()) {
    const auto [key, value] = precision_aware_key(c.plan);
    throw ScenarioError(key, value,
                        "is not run by the executor: it keeps Adam's moments and masters in fp32 (the "
                        "precision-aware optimizer is priced by the simulator only)");
  }
  if (c.micro_batches() < 1 || c.training.global_batch % (c.training.micro_batch * c.plan.dp) != 0)
    throw std::invalid_argument("training.global_batch=" + std::to_string(c.training.global_batch) +
                                " is not a multiple of micro_batch*dp");
  if (c.training.lora) validate_lora(c);
  const Dtype p = c.training.precision;
  if (p != Dtype::fp32 && p != Dtype::bf16 && p != Dtype::fp16)
    throw std::invalid_argument("training.precision=" + std::string(to_string(p)) + ": the executor runs fp32, bf16, fp16");
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
