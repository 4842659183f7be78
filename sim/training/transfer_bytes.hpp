#pragma once
// The bytes one element of each tensor a training step moves occupies, and the size of
// a pipeline transfer: shared by the event engine's step graph (step_graph.cpp) and the
// search's closed-form estimate (sim/search/analytic.cpp), so the two price the same bytes.
#include <cstdint>

#include "models/dtype.hpp"
#include "models/model_spec.hpp"
#include "models/plan.hpp"

namespace twinsim {

// A gradient element as the data-parallel collectives carry it: fp32 training reduces
// fp32, mixed precision the 16-bit gradients (Rajbhandari et al. 2020 §3); fp8 training
// keeps bf16 gradients (Transformer Engine computes wgrad in fp8, accumulates in bf16/fp32).
int grad_element_bytes(Dtype precision);

// A parameter element as ZeRO's gathers carry it: the model's own copy, 16-bit under
// mixed precision and under fp8 (TE keeps bf16 weights and casts them per step).
int param_element_bytes(Dtype precision);

// One micro-batch's activations (or their gradients) crossing a stage boundary, per TP
// rank: Megatron sends 1/t of the [b, s/cp, h] tensor from each (Narayanan et al. 2021 §4.1).
double pipeline_transfer_bytes(const ModelSpec& model, const Plan& plan, std::int64_t micro_batch,
                               std::int64_t seq_len, Dtype precision);

}  // namespace twinsim
