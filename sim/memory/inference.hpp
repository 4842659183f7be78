#pragma once
// Memory of serving: the KV cache and the prefill working set (weights: weights.hpp).
#include <cstdint>
#include <optional>

#include "models/dtype.hpp"
#include "models/model_spec.hpp"
#include "models/plan.hpp"
#include "models/workload.hpp"

namespace twinsim {

// Bytes one token adds to the KV cache of `layers` layers on one GPU:
// 2 (K and V) x layers x kv_heads x head_dim x dtype (Kwon et al. 2023, vLLM §3:
// 2 x 5120 x 40 x 2 B = 800 KB for OPT/Llama-13B), kv_heads split over TP with at
// least one head per GPU (replicated when kv_heads < tp).
// MLA caches the latent and the RoPE key instead, unsplit: (kv_lora_rank + qk_rope_head_dim)
// per layer. A token of a windowed layer costs the same while it is in the window.
std::int64_t kv_cache_bytes_per_token(const ModelSpec& model, std::int64_t layers, int tp, Dtype kv_dtype);

// The KV cache of stage `stage` for batch x (prompt_len + output_len) tokens; a windowed
// layer keeps at most sliding_window of them per sequence.
// `keep_window_kv`: the engine keeps a windowed layer's out-of-window tokens too
// (StackSpec::serving_keeps_window_kv, vLLM V0).
std::int64_t inference_kv_cache_bytes(const ModelSpec& model, const Plan& plan,
                                      const InferenceWorkload& inference, int stage, bool keep_window_kv = false);

// Live activations while prefilling the whole batch's prompts at once (an upper bound:
// schedulers may chunk the prefill). Nothing is kept for backward; tensors live as in an
// eager no-grad forward (Megatron's or vLLM's layer loop): the layer's input (held by the
// loop until the layer returns), the norm output and the residual, three [s, b, h], next
// to the larger of the attention's tensors (q, k, v, O; the third stream is then the
// output projection's result) and the activation's input(s) and output (inputs +
// outputs of the op, from layer_ops). On the last stage, after the layers, their output
// and the fp32 logits of the last position (batch x vocab / tp x 4 B, as vLLM's
// LogitsProcessor) if that is more.
std::int64_t prefill_activation_bytes(const ModelSpec& model, const Plan& plan,
                                      const InferenceWorkload& inference, int stage);

// The weights one GPU of a stage holds while serving (the draft model's apart): all of
// the stage's, or with plan.offload_params (ZeRO-Inference: DeepSpeed's ZeRO-3 inference
// with offload_param to cpu or nvme; Aminabadi et al. 2022, "DeepSpeed-Inference") the
// module in use and the one fetched ahead of it: twice the largest of a layer and the
// (vocabulary-parallel) embedding table. inference_offloaded_weight_bytes: the stage's weights in CPU memory or on the
// drives instead (0 without offload).
std::int64_t inference_gpu_weight_bytes(const ModelSpec& model, const Plan& plan, const InferenceWorkload& inference,
                                        int stage);
std::int64_t inference_offloaded_weight_bytes(const ModelSpec& model, const Plan& plan,
                                              const InferenceWorkload& inference, int stage);
// What one pass fetches per module with plan.offload_params: one layer of each kind and the
// embedding table (the head's weights, tied or not, are fetched again where it runs).
struct OffloadedModuleBytes {
  std::int64_t dense_layer = 0, moe_layer = 0, embedding = 0;
};
// expert_dtype: the routed experts' (InferenceWorkload::experts_dtype(); unset: weight_dtype).
OffloadedModuleBytes offloaded_module_bytes(const ModelSpec& model, const Plan& plan, Dtype weight_dtype,
                                            std::optional<Dtype> expert_dtype = std::nullopt);

// Speculative decoding's draft model (inference.speculative.draft_model), held on every
// GPU beside the served model and split over the same TP group (speculation runs on one
// pipeline stage): its weights in weight_dtype, its KV cache for the batch's
// prompt_len + output_len tokens, and what one token adds to that cache. 0 without one.
std::int64_t draft_weight_bytes(const Plan& plan, const InferenceWorkload& inference);
std::int64_t draft_kv_cache_bytes(const Plan& plan, const InferenceWorkload& inference);
std::int64_t draft_kv_bytes_per_token(const Plan& plan, const InferenceWorkload& inference);

}  // namespace twinsim
