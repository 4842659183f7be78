#pragma once
// Activation memory of training: what the forward passes of the micro-batches in flight
// on a pipeline stage keep for their backward passes (Korthikanti et al. 2022, §4),
// summed op by op from models/layer_ops.
#include <cstdint>

#include "models/layer_ops.hpp"
#include "models/model_spec.hpp"
#include "models/plan.hpp"
#include "models/workload.hpp"

namespace twinsim {

// The dtype activations are kept in. fp8 training (Transformer Engine) still keeps
// activations between ops in bf16: assumption, fp8 casts live only inside the GEMMs.
Dtype activation_dtype(Dtype precision);

// Per layer, per micro-batch, on one GPU.
struct LayerActivations {
  std::int64_t dense = 0, moe = 0;  // kept for backward under the plan's recompute policy
  // What recomputing one layer in backward brings back to life on top of what it keeps
  // (full: the layer's whole activations; selective: its attention scores).
  std::int64_t dense_recompute = 0, moe_recompute = 0;
};

LayerActivations layer_activations(const ModelSpec& model, const Plan& plan, const MicroBatchShape& shape);

// Model chunks whose forward activations stage `stage` holds at its peak (micro-batches
// when there is one chunk per stage):
//   GPipe: all m (Huang et al. 2019);  1F1B: min(pp - stage, m) (Narayanan et al. 2021 §2.2.1);
//   interleaved: Megatron's warm-up (pp - stage - 1) * 2 + (v - 1) * pp, plus the one in
//   flight, at most m * v, each chunk of layers / (pp * v) layers (§2.2.2; this gives
//   the first stage Korthikanti §4.2.3's factor 1 + (p - 1) / (p v)).
std::int64_t chunks_in_flight(const Plan& plan, int stage, std::int64_t micro_batches);

// The first stage's extra per micro-batch: the embedding's dropout mask, sbh/t with SP
// (Korthikanti §4.3; the embedding output is the first layer's input, counted there).
std::int64_t embedding_activation_bytes(const ModelSpec& model, const Plan& plan, const MicroBatchShape& shape);

// The last stage's extra per micro-batch (Korthikanti §4.3): final-norm input and output
// layer input (2sbh/t each with SP) and fp32 logits for the cross-entropy, 4sbv/t.
std::int64_t output_activation_bytes(const ModelSpec& model, const Plan& plan, const MicroBatchShape& shape);

// All activation memory of stage `stage` at its peak, on one GPU.
std::int64_t training_activation_bytes(const ModelSpec& model, const Plan& plan,
                                       const TrainingWorkload& training, const LayerActivations& per_layer,
                                       int stage);

}  // namespace twinsim
