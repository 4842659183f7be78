#pragma once
// Memory of serving: the KV cache and the prefill working set (weights: weights.hpp).
#include <cstdint>

#include "models/dtype.hpp"
#include "models/model_spec.hpp"
#include "models/plan.hpp"
#include "models/workload.hpp"

namespace twinsim {

// Bytes one token adds to the KV cache of `layers` layers on one GPU:
// 2 (K and V) x layers x kv_heads x head_dim x dtype (Kwon et al. 2023, vLLM §3:
// 2 x 5120 x 40 x 2 B = 800 KB for OPT/Llama-13B), kv_heads split over TP with at
// least one head per GPU (replicated when kv_heads < tp).
std::int64_t kv_cache_bytes_per_token(const ModelSpec& model, std::int64_t layers, int tp, Dtype kv_dtype);

// The KV cache of stage `stage` for batch x (prompt_len + output_len) tokens.
std::int64_t inference_kv_cache_bytes(const ModelSpec& model, const Plan& plan,
                                      const InferenceWorkload& inference, int stage);

// Live activations while prefilling the whole batch's prompts at once (an upper bound:
// schedulers may chunk the prefill): the residual stream plus the largest op's
// activation traffic (inputs + outputs, from layer_ops), plus on the last stage the fp32
// logits of the last position (batch x vocab / tp x 4 B). Nothing is kept for backward.
std::int64_t prefill_activation_bytes(const ModelSpec& model, const Plan& plan,
                                      const InferenceWorkload& inference, int stage);

}  // namespace twinsim
