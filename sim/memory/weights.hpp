#pragma once
// Parameters, gradients and optimizer states one GPU holds: the weights of its pipeline
// stage, sharded by tensor and expert parallelism, then by ZeRO over data parallelism.
#include <cstdint>
#include <optional>

#include "hardware/gpu_spec.hpp"
#include "hardware/stack_spec.hpp"
#include "models/dtype.hpp"
#include "models/lora.hpp"
#include "models/model_spec.hpp"
#include "models/optimizer_state.hpp"
#include "models/plan.hpp"
#include "models/workload.hpp"

namespace twinsim {

// Parameters on one GPU of a stage (after TP and EP, before ZeRO).
struct StageParams {
  std::int64_t dense = 0;     // everything but routed experts; ZeRO shards it over dp * cp
  std::int64_t expert = 0;    // routed experts; ZeRO shards them over dp * cp / ep
  std::int64_t matrices = 0;  // of both: transformer-layer weight matrices (what inference quantizes)
  std::int64_t expert_matrices = 0;  // the routed experts' among them
  std::int64_t total() const { return dense + expert; }
};

// Megatron's layout: TP splits the QKV/FC1 columns and proj/FC2 rows and their column
// biases (Shoeybi et al. 2019, §3); row-parallel biases, norms and the MoE router are
// replicated; the word embedding is vocabulary-parallel on the first stage and the
// output layer on the last (a copy of the embedding when tied and pp > 1, as Megatron
// keeps one for the logits); learned positions are replicated; the final norm is on
// the last stage. Vocabulary padding to a multiple of 128*tp is not modelled.
StageParams stage_params(const ModelSpec& model, const Plan& plan, int stage);

// The parameters a step trains, of a stage and of one layer on one GPU (after TP and EP,
// before ZeRO): their gradients, optimizer states, gradient reduction and update. All of
// stage_params / layer_params_on_gpu, or under training.lora the adapters alone (models/
// lora.hpp; the frozen base has no gradients). The engine, the search's estimate and the
// memory report take them from here.
StageParams trainable_stage_params(const ModelSpec& model, const Plan& plan, const TrainingWorkload& training,
                                   int stage);
StageParams trainable_layer_params(const ModelSpec& model, const Plan& plan, const TrainingWorkload& training,
                                   bool moe_layer);

// One transformer layer's parameters on one GPU, by the same layout: the per-layer size
// ZeRO's gathers and the DP buckets carry (sim/training/step_graph.cpp, sim/search).
StageParams layer_params_on_gpu(const ModelSpec& model, const Plan& plan, bool moe_layer);

// The type the data-parallel collectives carry parameters and gradients in: the training
// precision's (Megatron and DeepSpeed keep a 16-bit model), or fp32 where the stack keeps the
// model in fp32 (layer_kernels hf_eager, torch.amp: DDP all-reduces the fp32 .grad, FSDP
// without a MixedPrecision policy gathers and reduce-scatters fp32). The engine, the
// search's estimate and the memory report all take it from here.
inline Dtype dp_state_dtype(const StackSpec& stack, Dtype precision) {
  return stack.hf_eager() ? Dtype::fp32 : precision;
}

// The type the stack keeps and reduces gradients in (the memory's gradients, the data-parallel
// collectives' values): dp_state_dtype's, or fp32 where the stack accumulates and reduces
// 16-bit training's gradients in fp32 (StackSpec::grad_reduce_fp32, bf16
// and fp8 training; fp16 keeps its own). The parameters' gathers keep dp_state_dtype's.
inline Dtype dp_gradient_dtype(const StackSpec& stack, Dtype precision) {
  const Dtype state = dp_state_dtype(stack, precision);
  return stack.grad_reduce_fp32 && state != Dtype::fp16 ? Dtype::fp32 : state;
}

// Bytes per parameter of weights, gradients and optimizer states.
struct BytesPerParam {
  std::int64_t params = 0, grads = 0, optimizer = 0;
};

// fp32: 4 + 4, Adam m and v 8 (SGD momentum 4).
// fp16/bf16 mixed precision as the ZeRO paper counts it (Rajbhandari et al. 2020, §3.1):
//   2 + 2, Adam 12 (fp32 master, m, v); SGD 8 (fp32 master, momentum).
//   (Megatron with bf16 keeps fp32 gradients, 4 bytes: the overload taking the stack.)
// fp8, nvfp4, mxfp4 (Transformer Engine's recipes): the 16-bit model as bf16's, its fp8 / fp4 copies of the
//   layers' weight matrices apart (gemm_weight_copy_bytes).
// The optimizer's states in `states`' types (plan.exp_avg_dtype ...: optimizer_state_dtypes;
// models/optimizer_state.hpp), the one home the memory model and the checkpoint size call.
BytesPerParam training_bytes_per_param(Dtype precision, Optimizer optimizer, const OptimizerStateDtypes& states = {});
// The same with the gradients as the stack keeps them (dp_gradient_dtype: fp32 under
// StackSpec::grad_reduce_fp32 for bf16 and fp8 training, 4 bytes).
BytesPerParam training_bytes_per_param(Dtype precision, Optimizer optimizer, const StackSpec& stack,
                                       const OptimizerStateDtypes& states);

// What ZeRO-Offload keeps per offloaded parameter in CPU memory: the optimizer's states,
// plus an fp32 master in fp32 training, which keeps none on the GPU (the weights are the
// params) but whose CPU update needs its own (DeepSpeed's fp32 partition,
// single_partition_of_fp32_groups, is made in every precision). The bytes the optimizer's
// NVMe swap moves too (sim/cost/offload_io).
std::int64_t offloaded_optimizer_bytes_per_param(Dtype precision, Optimizer optimizer);

// ZeRO-Infinity's CPU buffers with plan.offload_device: nvme, at DeepSpeed's defaults (its
// config reference, docs/_pages/config-json.md): the optimizer swapper's pool holds
// offload_optimizer.buffer_count (4: "at least the number of states per parameter", Adam's
// parameter, gradient, momentum and variance) fp32 tensors of the largest sub-group
// (zero_optimization.sub_group_size, 1e9 parameters, or the GPU's shard if smaller); the
// parameter swapper's pool offload_param.buffer_count (5) buffers of buffer_size (1e8)
// 16-bit parameters.
inline constexpr std::int64_t kNvmeSubGroupParams = 1'000'000'000;
inline constexpr std::int64_t kNvmeOptimizerBuffers = 4;
inline constexpr std::int64_t kNvmeParamBuffers = 5;
inline constexpr std::int64_t kNvmeParamBufferParams = 100'000'000;

struct WeightMemory {
  std::int64_t params = 0, grads = 0, optimizer = 0;
  std::int64_t host_optimizer = 0;  // plan.offload_optimizer: the optimizer states in CPU memory instead
  std::int64_t host_params = 0;     // plan.offload_params: the 16-bit parameter shard in CPU memory instead
  std::int64_t nvme_optimizer = 0;  // plan.offload_device: nvme: the states on the drives (the CPU keeps buffers)
  std::int64_t nvme_params = 0;     // ... and the parameter shard
  std::int64_t host() const { return host_optimizer + host_params; }
  std::int64_t nvme() const { return nvme_optimizer + nvme_params; }
};

// ZeRO stage 1 shards optimizer states, 2 also gradients, 3 also parameters, over a
// group of `group` GPUs (Rajbhandari et al. 2020, §5, Figure 1).
WeightMemory zero_sharded(std::int64_t params, const BytesPerParam& bytes, int zero, std::int64_t group);

// fp8 / fp4 training: the bytes `matrices` transformer-layer weight-matrix parameters keep
// beside the 16-bit model for their low-precision GEMMs. Transformer Engine casts each linear
// layer's weight once a step (its first micro-batch) into a workspace it keeps across
// micro-batches and steps (module/base.py get_weight_workspace: "it persists beyond a single
// forward pass"; Megatron-core passes is_first_microbatch unless
// disable_parameter_transpose_cache, default false). fp8: the fp8 weight, 1 byte, and on a GPU
// whose fp8 GEMMs take only the TN layout (GpuSpec::fp8_gemm_tn_only: Hopper) its fp8
// transpose for the dgrad, 1 more. nvfp4 / mxfp4: a rowwise copy (fprop) and a columnwise one
// (dgrad), each 4-bit values with their block scales (scaled_bytes: 0.5625 bytes a weight for
// nvfp4, 0.53125 for mxfp4), as TE's NVFP4Tensor keeps both: Blackwell's fp4 MMA reads
// K-major operands only. The embedding, the output layer, norms and biases stay 16-bit.
// 0 for other precisions.
std::int64_t gemm_weight_copy_bytes(const GpuSpec& gpu, Dtype precision, std::int64_t matrices);

// Training: a stage's weights, gradients and optimizer states on one GPU.
// The gradients as `stack` keeps them (training_bytes_per_param's overload); under fp8 the
// params include the layers' cached fp8 weights (gemm_weight_copy_bytes) but under ZeRO-3,
// whose gathered layers are cast as they come and dropped with them (sim/memory/buffers).
// FSDP2 under pipeline parallelism keeping each stage's parameters gathered and its
// gradients unsharded between micro-batches (StackSpec::fsdp_pp_keep_gathered): ZeRO-3 with
// pp > 1 on such a stack. The stage then holds its whole 16-bit parameters (the weight
// matrices in fp8 under fp8 training: torchao's float8 all-gather) and its whole gradients
// in their reduce dtype (FSDP2 accumulates unsharded gradients in reduce_dtype,
// FSDPParam.to_accumulated_grad_if_needed) beside the shards; the step gathers once and
// reduce-scatters once (sim/training/step_graph.cpp, sim/search/analytic.cpp).
bool fsdp_keeps_stage_gathered(const PlanKnobs& plan, const StackSpec& stack);

// Bytes of `matrices` frozen LoRA base weight-matrix parameters stored as `base`
// (models/lora.hpp LoraBase): 16-bit, fp8 and int4 as a served weight matrix
// (sim/inference/quantization.hpp weight_matrix_bytes: int4 with an fp16 scale per 128);
// nf4 as QLoRA stores it, 4-bit codes, an fp8 absmax per 64 weights and an fp32 constant
// per 64 x 256 of those (Dettmers et al. 2023 §3, double quantization: 4.127 bits a weight).
std::int64_t lora_base_matrix_bytes(LoraBase base, std::int64_t matrices);

WeightMemory training_weight_memory(const ModelSpec& model, const Plan& plan, const StackSpec& stack,
                                    const GpuSpec& gpu, const TrainingWorkload& training, int stage);

// Inference: weight matrices in weight_dtype (int4 with one fp16 scale per group of
// 128 weights, as GPTQ/AWQ pack them; int8 and fp8 with per-channel/per-tensor scales,
// negligible); the other parameters (embeddings, norms, biases, router) in 16 bits
// (fp32 when weight_dtype is fp32). The routed experts' matrices in expert_dtype
// (InferenceWorkload::experts_dtype(); unset: weight_dtype).
std::int64_t inference_weight_bytes(const StageParams& params, Dtype weight_dtype,
                                    std::optional<Dtype> expert_dtype = std::nullopt);

}  // namespace twinsim
