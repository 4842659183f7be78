#include "sim/memory/weights.hpp"

#include <algorithm>
#include <stdexcept>

#include "models/checked_math.hpp"
#include "models/layer_ops.hpp"
#include "models/lora.hpp"
#include "models/optimizer_state.hpp"
#include "models/param_count.hpp"
#include "sim/inference/quantization.hpp"
#include "sim/memory/stage_layers.hpp"

namespace twinsim {

namespace {

// Scales StageParams by a layer count.
StageParams times(const StageParams& p, std::int64_t n) {
  return {checked_mul(p.dense, n), checked_mul(p.expert, n), checked_mul(p.matrices, n),
          checked_mul(p.expert_matrices, n)};
}

void add(StageParams& to, const StageParams& from) {
  to.dense = checked_add(to.dense, from.dense);
  to.expert = checked_add(to.expert, from.expert);
  to.matrices = checked_add(to.matrices, from.matrices);
  to.expert_matrices = checked_add(to.expert_matrices, from.expert_matrices);
}


// One FFN of `ffn_gpu` columns on this GPU: column-parallel up (and gate), row-parallel down.
StageParams ffn_on_gpu(const ModelSpec& m, std::int64_t ffn_gpu) {
  const std::int64_t up_matrices = m.gated() ? 2 : 1;
  StageParams p;
  p.matrices = checked_mul((up_matrices + 1) * m.hidden, ffn_gpu);
  p.dense = p.matrices + (m.bias ? up_matrices * ffn_gpu + m.hidden : 0);
  return p;
}

// MLA on one GPU (Megatron-core MultiLatentAttention): the down-projections to the Q
// bottleneck and the KV latent (+ RoPE key) and their norms are duplicated on every TP
// rank; the up-projections are column-parallel over heads, W_O row-parallel.
StageParams mla_on_gpu(const ModelSpec& m, int tp) {
  const MlaSpec& a = *m.mla;
  const std::int64_t heads = heads_per_gpu(m, tp);
  StageParams p;
  const std::int64_t q_cols = heads * m.qk_head_dim();
  p.matrices = a.q_lora_rank > 0 ? checked_mul(m.hidden, a.q_lora_rank) + checked_mul(a.q_lora_rank, q_cols)
                                 : checked_mul(m.hidden, q_cols);
  p.matrices += checked_mul(m.hidden, a.kv_lora_rank + a.qk_rope_head_dim);
  p.matrices += checked_mul(a.kv_lora_rank, heads * (a.qk_nope_head_dim + a.v_head_dim));
  p.matrices += checked_mul(heads * a.v_head_dim, m.hidden);
  p.dense = p.matrices + a.q_lora_rank + a.kv_lora_rank + (m.bias ? m.hidden : 0);
  return p;
}

StageParams attention_on_gpu(const ModelSpec& m, int tp) {
  StageParams p;
  if (m.mla) {
    p = mla_on_gpu(m, tp);
  } else {
    const std::int64_t q_cols = heads_per_gpu(m, tp) * m.head_dim;
    const std::int64_t kv_cols = kv_heads_per_gpu(m, tp) * m.head_dim;
    p.matrices = checked_mul(m.hidden, q_cols + 2 * kv_cols) + checked_mul(q_cols, m.hidden);
    p.dense = p.matrices + (m.bias || m.qkv_bias ? q_cols + 2 * kv_cols : 0) + (m.bias ? m.hidden : 0);
  }
  if (m.attention_sinks) p.dense += heads_per_gpu(m, tp);  // one sink logit per local head
  if (m.qk_norm) p.dense += 2 * m.qk_head_dim();          // replicated, like every norm
  return p;
}

std::int64_t embedding_on_gpu(const ModelSpec& m, int tp) {
  std::int64_t p = checked_mul(m.vocab, m.hidden) / tp;  // vocabulary-parallel
  if (m.position == Position::learned) p += checked_mul(m.max_seq_len, m.hidden);
  return p;
}

}  // namespace

StageParams layer_params_on_gpu(const ModelSpec& m, const Plan& plan, bool moe_layer) {
  StageParams p = attention_on_gpu(m, plan.tp);
  p.dense += (m.sandwich_norm ? 4 : 2) * norm_params(m, m.hidden);
  if (!moe_layer) {
    add(p, ffn_on_gpu(m, m.ffn_hidden / plan.tp));
    return p;
  }
  const MoeSpec& e = *m.moe;
  p.dense += checked_mul(m.hidden, e.experts) + (e.router_bias ? e.experts : 0);  // router, replicated
  add(p, times(ffn_on_gpu(m, e.shared_width() / plan.tp), e.shared_experts));
  if (e.shared_experts > 0 && e.shared_expert_gate) p.dense += m.hidden;  // replicated [h -> 1]
  // each routed expert's columns split over the experts' own TP group (plan.expert_tp)
  const StageParams one_expert = ffn_on_gpu(m, e.expert_ffn_hidden / plan.etp());
  const std::int64_t local_experts = e.experts / plan.ep;
  p.expert = checked_mul(one_expert.dense, local_experts);
  p.expert_matrices = checked_mul(one_expert.matrices, local_experts);
  p.matrices = checked_add(p.matrices, p.expert_matrices);
  return p;
}

StageParams stage_params(const ModelSpec& model, const Plan& plan, int stage) {
  const int mirror = dualpipe_mirror_stage(plan, stage);
  if (mirror >= 0) {  // DualPipe: two stages' parameters a rank (README's table: 2x)
    const Plan one = one_stage_a_rank(plan);
    StageParams p = stage_params(model, one, stage);
    add(p, stage_params(model, one, mirror));
    return p;
  }
  const StageLayers layers = stage_layers(model, plan, stage);
  StageParams p = times(layer_params_on_gpu(model, plan, false), layers.dense);
  if (layers.moe > 0) add(p, times(layer_params_on_gpu(model, plan, true), layers.moe));
  const bool first = stage == 0, last = stage == plan.pp - 1;
  if (first) p.dense += embedding_on_gpu(model, plan.tp);
  if (last) {
    p.dense += norm_params(model, model.hidden);
    for (int k = 0; k < model.mtp_layers; ++k) {  // DeepSeek-V3 §2.2: block, [2h -> h] projection, 3 norms
      add(p, layer_params_on_gpu(model, plan, model.is_moe_layer(model.layers + k)));
      p.dense += checked_mul(2 * model.hidden, model.hidden) + 3 * norm_params(model, model.hidden);
    }
    if (!model.tied_embeddings || plan.pp > 1) p.dense += checked_mul(model.vocab, model.hidden) / plan.tp;
  }
  return p;
}

StageParams trainable_layer_params(const ModelSpec& model, const Plan& plan, const TrainingWorkload& training,
                                   bool moe_layer) {
  if (!training.lora) return layer_params_on_gpu(model, plan, moe_layer);
  const std::int64_t adapters = lora_layer_params(model, plan, *training.lora);
  return {adapters, 0, adapters, 0};
}

StageParams trainable_stage_params(const ModelSpec& model, const Plan& plan, const TrainingWorkload& training,
                                   int stage) {
  if (!training.lora) return stage_params(model, plan, stage);
  const StageLayers layers = stage_layers(model, plan, stage);  // dense layers only (MoE refused)
  return times(trainable_layer_params(model, plan, training, false), layers.dense + layers.moe);
}

BytesPerParam training_bytes_per_param(Dtype precision, Optimizer optimizer, const OptimizerStateDtypes& states) {
  // the optimizer's states: models/optimizer_state.hpp, the executor's count too
  const std::int64_t optimizer_bytes = optimizer_bytes_per_param(precision, optimizer, states);
  if (precision == Dtype::fp32 || precision == Dtype::tf32) return {4, 4, optimizer_bytes};
  return {2, 2, optimizer_bytes};  // TE's recipes keep the bf16 model (and its master: in the states)
}

BytesPerParam training_bytes_per_param(Dtype precision, Optimizer optimizer, const StackSpec& stack,
                                       const OptimizerStateDtypes& states) {
  BytesPerParam bytes = training_bytes_per_param(precision, optimizer, states);
  if (dp_gradient_dtype(stack, precision) == Dtype::fp32) bytes.grads = 4;
  return bytes;
}

std::int64_t offloaded_optimizer_bytes_per_param(Dtype precision, Optimizer optimizer) {
  const std::int64_t states = training_bytes_per_param(precision, optimizer).optimizer;
  return precision == Dtype::fp32 || precision == Dtype::tf32 ? states + 4 : states;
}

WeightMemory zero_sharded(std::int64_t params, const BytesPerParam& bytes, int zero, std::int64_t group) {
  const std::int64_t shard = ceil_div(params, group);
  PlanKnobs stage;  // what each stage shards: Plan's one home for it
  stage.zero = zero;
  WeightMemory w;
  w.params = checked_mul(stage.shards_params() ? shard : params, bytes.params);
  w.grads = gradient_bytes(params, bytes.grads, stage.shards_grads(), group);  // trainable ones: models/optimizer_state
  w.optimizer = checked_mul(stage.shards_optimizer() ? shard : params, bytes.optimizer);
  return w;
}

std::int64_t gemm_weight_copy_bytes(const GpuSpec& gpu, Dtype precision, std::int64_t matrices) {
  if (is_fp4(precision)) return checked_mul(2, scaled_bytes(precision, matrices));  // rowwise and columnwise
  if (precision != Dtype::fp8) return 0;
  return checked_mul(matrices, gpu.fp8_gemm_tn_only ? 2 : 1);  // the fp8 weight, and its transpose where needed
}

bool fsdp_keeps_stage_gathered(const PlanKnobs& plan, const StackSpec& stack) {
  return stack.fsdp_pp_keep_gathered && plan.pp > 1 && plan.shards_params();
}

std::int64_t lora_base_matrix_bytes(LoraBase base, std::int64_t matrices) {
  switch (base) {
    case LoraBase::bf16: return weight_matrix_bytes(Dtype::bf16, matrices);
    case LoraBase::fp16: return weight_matrix_bytes(Dtype::fp16, matrices);
    case LoraBase::fp8: return weight_matrix_bytes(Dtype::fp8, matrices);
    case LoraBase::int4: return weight_matrix_bytes(Dtype::int4, matrices);
    case LoraBase::nf4: return ceil_div(matrices, 2) + ceil_div(matrices, 64) + 4 * ceil_div(matrices, 64 * 256);
  }
  return weight_matrix_bytes(Dtype::bf16, matrices);
}

namespace {

// LoRA / QLoRA: the frozen base keeps its parameters only, its weight matrices as
// training.lora.base_dtype stores them and the rest (embeddings, norms, biases) in 16 bits,
// sharded like the parameters under ZeRO-3 / FSDP; the adapters are a model trained in the
// run's precision, with its gradients and optimizer states (Hu et al. 2021 §4.2; QLoRA §3).
// Under fp8 training a 16-bit base also keeps TE's cached fp8 copies (gemm_weight_copy_bytes);
// an fp8 base (NeMo's fp8_params) is its own.
WeightMemory lora_weight_memory(const ModelSpec& model, const Plan& plan, const StackSpec& stack, const GpuSpec& gpu,
                                const TrainingWorkload& training, int stage) {
  const StageParams p = stage_params(model, plan, stage);
  std::int64_t base = checked_add(lora_base_matrix_bytes(training.lora->base, p.matrices),
                                  checked_mul(p.total() - p.matrices, std::int64_t{2}));
  if (training.lora->base != LoraBase::fp8) base = checked_add(base, gemm_weight_copy_bytes(gpu, training.precision, p.matrices));
  if (plan.shards_params()) base = ceil_div(base, plan.zero_shard_group_size());
  const BytesPerParam bytes =
      training_bytes_per_param(training.precision, training.optimizer, stack, optimizer_state_dtypes(plan));
  WeightMemory w = zero_sharded(trainable_stage_params(model, plan, training, stage).total(), bytes, plan.zero,
                                plan.zero_shard_group_size());
  w.params = checked_add(w.params, base);
  return w;
}

}  // namespace

WeightMemory training_weight_memory(const ModelSpec& model, const Plan& plan, const StackSpec& stack,
                                    const GpuSpec& gpu, const TrainingWorkload& training, int stage) {
  if (training.lora) return lora_weight_memory(model, plan, stack, gpu, training, stage);
  const StageParams p = stage_params(model, plan, stage);
  const BytesPerParam bytes =
      training_bytes_per_param(training.precision, training.optimizer, stack, optimizer_state_dtypes(plan));
  // Megatron reduces gradients and shards the distributed optimizer over the data-parallel
  // group including CP ranks; experts over the expert-data-parallel group, tp*cp*dp/(ep*expert_tp)
  // (PlanKnobs::expert_dp_group_size; dp*cp/ep without folding). Under hybrid sharding
  // (plan.dp_replicate) over one shard group, dp*cp/dp_replicate (PlanKnobs::zero_shard_group_size).
  WeightMemory w = zero_sharded(p.dense, bytes, plan.zero, plan.zero_shard_group_size());
  const WeightMemory e = zero_sharded(p.expert, bytes, plan.zero, plan.expert_dp_group_size());
  w.params += e.params;
  w.grads += e.grads;
  w.optimizer += e.optimizer;
  if (!plan.shards_params()) w.params += gemm_weight_copy_bytes(gpu, training.precision, p.matrices);
  // fp8-only weight matrices (stack.fp8_params): the fp8 data (and transpose) without the
  // 16-bit weight beside them
  if (stack.fp8_params && training.precision == Dtype::fp8 && !plan.shards_params())
    w.params -= checked_mul(p.matrices, bytes.params);
  if (fsdp_keeps_stage_gathered(plan, stack)) {
    const std::int64_t matrix_bytes = training.precision == Dtype::fp8 ? 1 : bytes.params;
    w.params += checked_add(checked_mul(p.matrices, matrix_bytes), checked_mul(p.total() - p.matrices, bytes.params));
    w.grads += checked_mul(p.total(), bytes.grads);
  }
  // ZeRO++ hpZ (Wang et al. 2023 §3.2): a second copy of the stage's parameters, sharded over
  // zero_hpz_partition_size GPUs of the node, from which the backward's gathers read
  if (plan.shards_params() && plan.zero_hpz_partition_size > 1)
    w.params += checked_mul(ceil_div(p.total(), plan.zero_hpz_partition_size), bytes.params);
  if (plan.offload_optimizer) {  // ZeRO-Offload: the fp32 weights and moments live in CPU memory
    const std::int64_t shard = w.optimizer / bytes.optimizer;  // parameters this GPU updates
    w.host_optimizer = checked_mul(shard, offloaded_optimizer_bytes_per_param(training.precision, training.optimizer));
    w.optimizer = 0;
    if (plan.offload_device == OffloadDevice::nvme) {  // ZeRO-Infinity: on the drives, staged through CPU buffers
      w.nvme_optimizer = w.host_optimizer;
      w.host_optimizer = kNvmeOptimizerBuffers * std::min(shard, kNvmeSubGroupParams) * 4;
    }
  }
  if (plan.offload_params) {  // ZeRO-Infinity: the ZeRO-3 parameter shard lives in CPU memory
    w.host_params = w.params;
    w.params = 0;
    if (plan.offload_device == OffloadDevice::nvme) {  // ... or on the drives, fetched through the pool
      w.nvme_params = w.host_params;
      w.host_params = kNvmeParamBuffers * kNvmeParamBufferParams * bytes.params;
    }
  }
  // compressed gradients keep what the compression dropped, an fp32 residual per gradient
  // value of the stage, added back before the next compression (error feedback: Seide et al.
  // 2014 §3; Karimireddy et al. 2019, Alg. 2), on the GPU beside the gradients
  if (plan.gradient_compression != GradCompression::none) w.grads += checked_mul(p.total(), std::int64_t{4});
  return w;
}

namespace {

// Weight matrices of `matrices` elements in `dtype`, int4's fp16 scale per group of 128 included.
std::int64_t matrix_bytes(Dtype dtype, std::int64_t matrices) {
  std::int64_t bytes = dtype_bytes(dtype, matrices);
  if (dtype == Dtype::int4) bytes += 2 * ceil_div(matrices, 128);  // fp16 scale / group
  return bytes;
}

}  // namespace

std::int64_t inference_weight_bytes(const StageParams& params, Dtype weight_dtype, std::optional<Dtype> expert_dtype) {
  const std::int64_t others = params.total() - params.matrices;
  const Dtype other_dtype = weight_dtype == Dtype::fp32 ? Dtype::fp32 : Dtype::bf16;
  const std::int64_t other_bytes = dtype_bytes(other_dtype, others);
  if (!expert_dtype || *expert_dtype == weight_dtype) return matrix_bytes(weight_dtype, params.matrices) + other_bytes;
  return matrix_bytes(weight_dtype, params.matrices - params.expert_matrices) +
         matrix_bytes(*expert_dtype, params.expert_matrices) + other_bytes;
}

}  // namespace twinsim
