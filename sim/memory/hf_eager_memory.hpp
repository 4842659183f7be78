#pragma once
// Training memory of one GPU under the stack `layer_kernels: hf_eager`: a Hugging Face model
// trained in PyTorch eager with its standard mixed precision. The model stays fp32 (4 bytes a
// parameter, 4 a gradient, Adam's two moments 8, no master copy); autocast's bf16 weight
// copies and every tensor autograd keeps come from the census of what HF's Llama layer saves
// (models/hf_eager_census); gradients exist from the backward until the optimizer's
// zero_grad(set_to_none=True), so they are not live at the forward's end unless micro-batches
// accumulate into them.
#include <cstdint>

#include "models/model_spec.hpp"
#include "models/plan.hpp"
#include "models/workload.hpp"
#include "sim/memory/memory_report.hpp"

namespace twinsim {

// What one micro-batch's forward keeps for its backward on one GPU (layers on the stage and,
// on the last, the head), with the most the backward adds on top at once: the loss's two fp32
// logit-sized gradients at the backward's start (nll_loss_backward's and log_softmax's, next
// to the kept log-softmax), or under full recompute (gradient checkpointing) a whole layer's
// saved tensors brought back while the others keep only their fp32 input.
std::int64_t hf_eager_activation_bytes(const ModelSpec& model, const Plan& plan, const TrainingWorkload& training,
                                       int stage);

// The stage's memory at its peak: the larger of the forward's end (weights, optimizer states,
// activations, and the gradients of earlier micro-batches when they accumulate) and the
// backward's end (every gradient, the activations freed). `buffer_bytes`: the stage's
// communication buffers and workspace, as for any stack. The memory report and the search's
// estimate both call it.
StageMemory hf_eager_training_stage(const ModelSpec& model, const Plan& plan, const TrainingWorkload& training,
                                    int stage, std::int64_t buffer_bytes);

}  // namespace twinsim
