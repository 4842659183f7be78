#include "scenario/default_stack.hpp"

#include <algorithm>

#include "scenario/load.hpp"

namespace twinsim {

namespace {

// The catalog GPU that is the CPU host's placeholder (hardware/catalog/gpus/host-cpu.yaml).
constexpr const char* kHostGpu = "host-cpu";

bool catalog_gpu_other_than_host(const std::string& gpu_name) {
  if (gpu_name == kHostGpu) return false;
  const std::vector<std::string> names = catalog_gpu_names();
  return std::find(names.begin(), names.end(), gpu_name) != names.end();
}

// What only PyTorch-native sharded training (FSDP2 in torchtitan) runs: torchtitan's per-op
// selective recompute (plan.recompute selective_op, its `selective_ac_option = "op"`; Megatron's
// selective recomputes modules), and ZeRO-2/3 sharding with a pipeline (DeepSpeed's
// PipelineEngine refuses it: "ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism",
// deepspeed/runtime/pipe/engine.py; Megatron-Core's distributed optimizer is ZeRO-1), with
// context parallelism (DeepSpeed's sequence parallelism is Ulysses' head split, no ring
// attention) or with async TP (plan.tp_comm_overlap under sharding: torchtitan's). torchtitan
// composes FSDP2 with all of them. Also ZeRO-3 with tensor parallelism: DeepSpeed's own tensor
// parallelism for training (AutoTP, `tensor_parallel.autotp_size`) combines with "ZeRO
// Optimization ... (Stage 0, 1, or 2)" only (deepspeed.ai/tutorials/autotp-training), while
// PyTorch's 2-D parallelism is FSDP2 over DTensor TP (pytorch.org/tutorials/intermediate/
// TP_tutorial.html; torchtitan's 2-D runs). ZeRO-2 with tp stays DeepSpeed's (AutoTP runs it).
// So is ZeRO-2/3 with hybrid sharding (plan.dp_replicate: FSDP2's HSDP, torchtitan's
// data_parallel_replicate_degree; DeepSpeed's ZeRO has hpZ and MiCS instead).
bool torchtitan_plan(const PlanKnobs& plan) {
  const bool sharded_beside_other_parallelism =
      plan.zero >= 2 && (plan.pp > 1 || plan.cp > 1 || plan.tp_comm_overlap || plan.dp_replicate > 1);
  const bool params_sharded_beside_tp = plan.zero >= 3 && plan.tp > 1;
  return plan.recompute == Recompute::selective_op || sharded_beside_other_parallelism || params_sharded_beside_tp;
}

// NVFP4 weights are TensorRT-LLM's: NVIDIA's NVFP4 checkpoints (TensorRT Model Optimizer) name it
// their one runtime engine, "Supported Runtime Engine(s): TensorRT-LLM", "ready for inference with
// TensorRT-LLM", test hardware B200 (huggingface.co/nvidia/Llama-3.1-405B-Instruct-FP4, modelopt
// v0.23.0; the FP8 checkpoints of the same series name TensorRT-LLM and vLLM). TensorRT-LLM 1.0's
// executor is `trtllm-v1`. MXFP4 (gpt-oss) keeps vLLM.
std::string serving_stack_name(const InferenceWorkload& w) {
  return w.weight_dtype == Dtype::nvfp4 ? "trtllm-v1" : "vllm-v1";
}

}  // namespace

bool deepspeed_only_plan(const PlanKnobs& plan) {
  return plan.offload_optimizer || plan.offload_params || plan.zero_quantized_weights ||
         plan.zero_quantized_gradients || plan.zero_hpz_partition_size > 1;
}

std::string_view default_training_stack_name(const PlanKnobs& plan) {
  if (deepspeed_only_plan(plan)) return "deepspeed";
  // compiled: the eager stack's kernel census covers one GPU's dense Llama-family layers in
  // bf16 or fp16 (stacks/torchtitan.yaml, layer_kernels hf_bf16, refused elsewhere), async TP
  // "requires --training.compile", and torchtitan's published multi-dimensional and float8 runs
  // compile
  if (torchtitan_plan(plan)) return "torchtitan-compile";
  // the rest of ZeRO-2/3 (data parallelism alone, or ZeRO-2 beside tensor parallelism)
  // DeepSpeed's, as before; Megatron-Core's distributed optimizer is ZeRO-1
  return plan.zero >= 2 ? "deepspeed" : "megatron-core";
}

std::string default_stack_name(const Scenario& s) {
  if (!catalog_gpu_other_than_host(s.cluster.gpu.name)) return "none";
  if (!s.is_training()) return serving_stack_name(*s.inference);
  return std::string(default_training_stack_name(s.plan));
}

bool default_stack_follows_plan(const Scenario& s) {
  return s.stack_is_default && s.is_training() && catalog_gpu_other_than_host(s.cluster.gpu.name);
}

StackSpec default_training_stack(const PlanKnobs& plan) {
  return catalog_stack(std::string(default_training_stack_name(plan)));
}

void apply_default_stack(Scenario& s) {
  s.stack = catalog_stack(default_stack_name(s));
  s.stack_is_default = true;
}

}  // namespace twinsim
