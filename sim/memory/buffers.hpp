#pragma once
// Communication buffers and workspace one GPU allocates besides weights and activations.
#include <cstdint>

#include "hardware/stack_spec.hpp"
#include "models/model_spec.hpp"
#include "models/plan.hpp"
#include "models/workload.hpp"
#include "sim/memory/weights.hpp"

namespace twinsim {

struct BufferBytes {
  std::int64_t dp_buckets = 0;  // ZeRO-2/3 gradient reduce-scatter / parameter all-gather buckets
  std::int64_t tp_gather = 0;   // sequence-parallel all-gather output
  std::int64_t pp_p2p = 0;      // pipeline send + receive of one activation (serving)
  std::int64_t cp_ring = 0;     // context-parallel K,V chunks in transit
  std::int64_t workspace = 0;   // cuBLAS and NCCL
  std::int64_t total() const { return dp_buckets + tp_gather + pp_p2p + cp_ring + workspace; }
};

// ZeRO-3's buckets of gathered parameters live at once: the one in use and the next one,
// prefetched (DeepSpeed stage3_prefetch_bucket_size, FSDP's backward prefetch), hence
// min(2, buckets of the stage): one when the whole stage is one bucket.
std::int64_t zero3_gathered_buckets(std::int64_t bucket_params, std::int64_t stage_params);

// A documented allowance, not a measurement: a 32 MiB cuBLAS workspace (cuBLAS docs,
// cublasSetWorkspace: 32 MiB recommended on Hopper, 4 MiB before) plus, per NCCL
// communicator of more than one rank (tp, cp, pp, dp, ep), 16 channels x NCCL_BUFFSIZE
// (4 MiB default, NCCL environment-variable docs) = 64 MiB. The CUDA context (~0.5 GB)
// and the caching allocator's fragmentation are outside this accounting (reserved_memory).
std::int64_t workspace_bytes(const Plan& plan);
// The NCCL share of it: the buffers NCCL allocates itself, outside PyTorch's caching
// allocator (the cuBLAS workspace is the allocator's: PyTorch hands it out).
std::int64_t nccl_buffer_bytes(const Plan& plan);

// Training buffers of a stage. With ZeRO 0/1 Megatron's buckets are views into the
// gradient buffer (counted under grads): no extra bytes. With ZeRO 2 one bucket of
// unsharded gradients is live (reduce-scattered and freed when the bucket's last grad is
// in); with ZeRO 3 also zero3_gathered_buckets of gathered parameters. Without overlap a
// bucket is the whole stage. A stack that sets zero_reduce_bucket_params runs DeepSpeed's
// ZeRO, which allocates its reduce buckets whole, in the gradients' dtype, from ZeRO-1 on:
// two under overlap_comm (plan.overlap_grad_reduce) for ZeRO-1/2, one for ZeRO-3
// (deepspeed/runtime/zero/stage_1_and_2.py setup_buckets, "Use double buffers to avoid data
// access conflict when overlap_comm is enabled"; stage3.py's IPG buffer; commit edaa72212).
// Under fp8 a gathered bucket's weight matrices also get their fp8 copies
// (gemm_weight_copy_bytes, sim/memory/weights.hpp), cast as the layer comes.
// Pipeline send/receive buffers exist only for serving.
BufferBytes training_buffers(const ModelSpec& model, const Plan& plan, const StackSpec& stack, const GpuSpec& gpu,
                             const TrainingWorkload& training, const StageParams& params);

// Serving: workspace and the pipeline/SP/CP buffers of the prefill.
BufferBytes inference_buffers(const ModelSpec& model, const Plan& plan, const InferenceWorkload& inference);

}  // namespace twinsim
