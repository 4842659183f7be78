#include "sim/memory/buffers.hpp"

#include <algorithm>

#include "models/checked_math.hpp"
#include "models/layer_ops.hpp"
#include "sim/memory/activations.hpp"

namespace twinsim {

std::int64_t zero3_gathered_buckets(std::int64_t bucket_params, std::int64_t stage_params) {
  if (bucket_params <= 0 || stage_params <= bucket_params) return 1;
  return std::min<std::int64_t>(2, ceil_div(stage_params, bucket_params));
}

std::int64_t nccl_buffer_bytes(const Plan& plan) {
  constexpr std::int64_t nccl_per_communicator = 16 * 4 * (std::int64_t{1} << 20);
  int communicators = 0;
  const int expert_tp = plan.etp() != plan.tp ? plan.etp() : 1;  // a communicator of its own
  for (std::int64_t group : {plan.tp, plan.cp, plan.pp, plan.dp * plan.cp, plan.ep, expert_tp})
    if (group > 1) ++communicators;
  return communicators * nccl_per_communicator;
}

std::int64_t workspace_bytes(const Plan& plan) {
  constexpr std::int64_t cublas = 32 * (std::int64_t{1} << 20);
  return cublas + nccl_buffer_bytes(plan);
}

namespace {

// Activation-side buffers of one micro-batch of `batch` sequences of `seq_len` tokens.
void add_activation_buffers(BufferBytes& b, const ModelSpec& model, const Plan& plan, std::int64_t batch,
                            std::int64_t seq_len, Dtype dtype, bool training) {
  const std::int64_t tokens = checked_mul(batch, seq_len) / plan.cp;
  const std::int64_t stream = dtype_bytes(dtype, checked_mul(tokens, model.hidden));
  const std::int64_t sp = plan.sequence_parallel ? plan.tp : 1;
  // Megatron-core's global memory buffer holds the all-gathered [s, b, h] input (Korthikanti §4.2.2)
  if (plan.tp > 1 && plan.sequence_parallel) b.tp_gather = stream;
  // Serving: one send and one receive in flight. Training: none apart from activations:
  // Megatron receives into the tensor that becomes the stage's input (kept by its first
  // layer) or the output's grad (the backward's dy), and frees a sent output at once
  // (core/pipeline_parallel/p2p_communication.py, schedules.py deallocate_output_tensor).
  if (plan.pp > 1 && !training) b.pp_p2p = 2 * stream / sp;
  if (plan.cp > 1)  // the K,V chunk being sent and the one being received
    b.cp_ring = 2 * dtype_bytes(dtype, tokens * attention_kv_columns(model, plan.tp));
  // the expert-parallel all-to-all's send and receive are its MoE layers' transients, not
  // buffers: a training step's in activations.cpp (moe_backward_transient), a prefill's in
  // inference.cpp (expert_parallel_combine_bytes)
}

}  // namespace

BufferBytes training_buffers(const ModelSpec& model, const Plan& plan, const StackSpec& stack, const GpuSpec& gpu,
                             const TrainingWorkload& training, const StageParams& params) {
  BufferBytes b;
  const BytesPerParam bytes =
      training_bytes_per_param(training.precision, training.optimizer, stack, optimizer_state_dtypes(plan));
  const std::int64_t bucket =
      plan.overlap_grad_reduce ? std::min(dp_bucket_params(plan), params.total()) : params.total();
  if (stack.zero_reduce_bucket_params > 0 && plan.shards_optimizer()) {  // DeepSpeed's reduce buckets
    const int copies = !plan.shards_params() && plan.overlap_grad_reduce ? 2 : 1;
    b.dp_buckets += checked_mul(copies * stack.zero_reduce_bucket_params, bytes.grads);
  } else if (plan.shards_grads()) {
    b.dp_buckets += checked_mul(bucket, bytes.grads);
  }
  if (plan.shards_params()) {
    // the bucket's weight matrices, in the stage's proportion, get their fp8 / fp4 copies
    const auto matrices = params.total() > 0 ? static_cast<std::int64_t>(static_cast<double>(bucket) *
                                                                         static_cast<double>(params.matrices) /
                                                                         static_cast<double>(params.total()))
                                             : std::int64_t{0};
    const std::int64_t one = checked_add(checked_mul(bucket, bytes.params),
                                         gemm_weight_copy_bytes(gpu, training.precision, matrices));
    b.dp_buckets += checked_mul(zero3_gathered_buckets(bucket, params.total()), one);
  }
  add_activation_buffers(b, model, plan, training.micro_batch, training.seq_len,
                         activation_dtype(training.precision), true);
  b.workspace = workspace_bytes(plan);
  return b;
}

BufferBytes inference_buffers(const ModelSpec& model, const Plan& plan, const InferenceWorkload& inference) {
  BufferBytes b;
  const Dtype dtype = inference.weight_dtype == Dtype::fp32 ? Dtype::fp32 : Dtype::bf16;
  add_activation_buffers(b, model, plan, inference.batch, inference.prompt_len, dtype, false);
  b.workspace = workspace_bytes(plan);
  return b;
}

}  // namespace twinsim
