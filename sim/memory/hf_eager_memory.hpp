#pragma once
// Training memory of one GPU under the stack `layer_kernels: hf_eager` or `hf_bf16`: a Hugging
// Face model trained in PyTorch eager. Under autocast (hf_eager) the model stays fp32 (4 bytes
// a parameter, 4 a gradient, Adam's two moments 8, no master copy); a model loaded in bf16
// (hf_bf16, DeepSpeed's bf16 engine) keeps the 16-bit model with the optimizer's fp32 master
// copy, as any mixed-precision run (sim/memory/weights). Autocast's bf16 weight copies and
// every tensor autograd keeps come from the census of what HF's Llama layer saves
// (models/hf_eager_census); gradients exist from the backward until the optimizer's
// zero_grad(set_to_none=True), so they are not live at the forward's end unless micro-batches
// accumulate into them.
#include <cstdint>

#include "hardware/gpu_spec.hpp"
#include "hardware/stack_spec.hpp"
#include "models/hf_eager_census.hpp"
#include "models/model_spec.hpp"
#include "models/plan.hpp"
#include "models/workload.hpp"
#include "sim/memory/memory_report.hpp"

namespace twinsim {

// Which census a stack runs (for stack.hf_modeling(); the training cost model and the
// memory model both ask here).
inline HfParams hf_params(const StackSpec& stack) {
  return stack.hf_eager() ? HfParams::fp32_autocast : HfParams::bf16;
}

// What one micro-batch's forward keeps for its backward on one GPU (layers on the stage and,
// on the last, the head), with the most the backward adds on top at once: the loss's two fp32
// logit-sized gradients at the backward's start (nll_loss_backward's and log_softmax's, next
// to the kept log-softmax), or under full recompute (gradient checkpointing) a whole layer's
// saved tensors brought back while the others keep only their input (the residual stream:
// fp32 under autocast, bf16 on a bf16 model).
std::int64_t hf_eager_activation_bytes(const ModelSpec& model, const Plan& plan, const TrainingWorkload& training,
                                       int stage, HfParams params);
// The same under `layer_kernels: litgpt_bf16`: each layer keeps LitGPT's counted LoRA layer
// (models/litgpt_census); the head is hf_bf16's census (LitGPT's chunked head not recounted).
std::int64_t litgpt_activation_bytes(const ModelSpec& model, const Plan& plan, const TrainingWorkload& training,
                                     int stage);

// The stage's memory at its peak: the larger of the forward's end (weights, optimizer states,
// activations, and the gradients of earlier micro-batches when they accumulate) and the
// backward's end (every gradient, the activations freed). `buffer_bytes`: the stage's
// communication buffers and workspace, as for any stack. The memory report and the search's
// estimate both call it.
StageMemory hf_eager_training_stage(const ModelSpec& model, const Plan& plan, const TrainingWorkload& training,
                                    int stage, std::int64_t buffer_bytes, const StackSpec& stack, const GpuSpec& gpu);

}  // namespace twinsim
