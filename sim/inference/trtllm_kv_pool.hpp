#pragma once
// TensorRT-LLM 1.0's KV pool (PyTorch backend) as KvCacheCreator.estimate_max_tokens sizes it
// (tensorrt_llm/_torch/pyexecutor/_util.py, mid-2025, the version with ExecutorConfig and
// _cal_max_tokens). The PyExecutor is built with a small cache, warms up (its CUDA graphs are
// captured in PyExecutor.__init__, model_engine.warmup) and then serves dummy context requests
// of max_num_tokens tokens (_create_dummy_context_requests: prompts of min(max_num_tokens,
// max_seq_len - 1) tokens until max_num_tokens, repeated tp_size times under attention DP, so
// every rank runs a full pass). It then reads torch's allocated peak and what is used outside
// torch's allocations (total_used - torch_used: "e.g., NCCL and CUDA graphs") and gives the
// cache free_gpu_memory_fraction (default 0.9, _get_free_gpu_memory_fraction) of the rest:
//   kv = fraction x (total - peak - outside)  (_cal_max_tokens; the small cache is added back)
// where vLLM's is utilization x total - weights - activations (kv_cache.hpp): the fraction here
// applies after the weights, not to the whole device.
#include <cstdint>

#include "sim/inference/kv_cache.hpp"

namespace twinsim {

// The workspace TensorRT-LLM's CUTLASS fused MoE op asks for `rows` tokens routed to top_k
// experts each (CutlassMoeFCRunner::getWorkspaceDeviceBufferSizes, moe_kernels.cu): with
// M = top_k x rows expanded rows, inputs are quantized to `act_bytes` (1 fp8, 0.5 nvfp4, 2 bf16)
// and the grouped GEMMs write bf16; a gated activation. Two overlapped buffers,
//   inputs  = M x max(hidden x act, hidden x 2 (fc2 result), inter x act (fc1 result)),
//   outputs = M x max(inter x act, 2 inter x 2 (GLU intermediate), hidden x 2),
// plus four int32 index arrays and the fp32 final scales, 20 B a row (the cub sorter, the
// per-expert offsets and the GEMM workspaces are a few MiB and left out).
std::int64_t cutlass_moe_workspace_bytes(std::int64_t rows, std::int64_t hidden, std::int64_t inter, int top_k,
                                         double act_bytes);

// One GPU's pool of stage `stage` as TensorRT-LLM 1.0 sizes it, with `config`'s
// max_batched_tokens (the dummy pass's tokens a rank), graph_sequences (the largest CUDA-graphed
// batch) and free_fraction. In the result usable_bytes is the device's whole memory, buffer_bytes
// what lives outside torch's allocations (the CUDA context, NCCL's and cuBLAS's buffers, the
// CUDA graphs' pool), activation_bytes the dummy pass's peak over the weights.
StageKvCapacity trtllm_stage_kv(const Scenario& scenario, const KvCacheConfig& config, int stage);

}  // namespace twinsim
