#include "sim/memory/inference.hpp"

#include <algorithm>
#include <string_view>

#include "models/checked_math.hpp"
#include "models/layer_ops.hpp"
#include "models/op_names.hpp"
#include "sim/memory/stage_layers.hpp"
#include "sim/memory/weights.hpp"

namespace twinsim {

std::int64_t kv_cache_elements_per_token_per_layer(const ModelSpec& model, int tp) {
  // MLA: the latent c_KV and the shared RoPE key, replicated on every TP rank (DeepSeek-V2
  // §2.1.2, Table 1: (d_c + d_h^R) per layer; vLLM's MLA backend keeps them unsplit)
  if (model.mla) return model.mla->kv_lora_rank + model.mla->qk_rope_head_dim;
  return 2 * kv_heads_per_gpu(model, tp) * model.head_dim;
}

std::int64_t kv_cache_bytes_per_token(const ModelSpec& model, std::int64_t layers, int tp, Dtype kv_dtype) {
  return dtype_bytes(kv_dtype, checked_mul(layers, kv_cache_elements_per_token_per_layer(model, tp)));
}

std::int64_t inference_kv_cache_bytes(const ModelSpec& model, const Plan& plan,
                                      const InferenceWorkload& inference, int stage, bool keep_window_kv) {
  const std::int64_t length = inference.prompt_len + inference.output_len;
  // a windowed layer keeps the last `sliding_window` tokens of a sequence only
  std::int64_t layer_tokens = 0;   // sum over the stage's layers of the tokens each keeps per sequence
  std::int64_t prefix_tokens = 0;  // the same for the prefix cache's own copy of the shared prefix
  for (int chunk = 0; chunk < chunks_per_stage(plan); ++chunk) {
    const std::int64_t first = chunk_first_layer(model, plan, stage, chunk);
    for (std::int64_t l = first; l < first + chunk_layer_count(model, plan, stage, chunk); ++l) {
      const bool windowed = model.is_windowed_layer(l) && !keep_window_kv;
      layer_tokens += windowed ? std::min(length, model.sliding_window) : length;
      prefix_tokens += windowed ? std::min(inference.prefix_tokens, model.sliding_window) : inference.prefix_tokens;
    }
  }
  // each sequence holds its whole cache (the prefix copied in), the prefix cache holds it once
  return checked_mul(kv_cache_bytes_per_token(model, 1, plan.tp, inference.kv_dtype),
                     checked_add(checked_mul(inference.batch, layer_tokens), prefix_tokens));
}

namespace {

bool ends_with(std::string_view s, std::string_view tail) {
  return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

// The larger of the attention core's and the activations' traffic (inputs + outputs) in
// layer `layer`: q, k, v and O; the activation's input(s) and output.
std::int64_t largest_point_bytes(const ModelSpec& model, std::int64_t layer, const Plan& plan,
                                 const MicroBatchShape& shape) {
  std::int64_t largest = 0;
  for (const LayerOp& op : build_layer_ops(model, layer, plan, shape))
    if (op.name == op_names::kAttnCore || ends_with(op.name, ".act"))
      largest = std::max(largest, op.fwd_bytes - op.weight_bytes);
  return largest;
}

// Expert parallelism: a MoE layer's combine, the most its prefill holds (exec/model/moe_block.cpp
// runs this order): the layer's input, its norm output, the output accumulator and the
// residual stream (four [s, b, h]), the router's fp32 probabilities, the activation's output
// the down projection read, and the routed rows three times: the experts' output, its copy
// being sent back and the receive (balanced routing: tokens x top_k rows each way).
std::int64_t expert_parallel_combine_bytes(const ModelSpec& model, const Plan& plan, std::int64_t tokens,
                                           std::int64_t stream, Dtype dtype) {
  const MoeSpec& moe = *model.moe;
  const std::int64_t rows = checked_mul(tokens, moe.top_k);
  const std::int64_t routed = dtype_bytes(dtype, checked_mul(rows, model.hidden));
  const std::int64_t act = dtype_bytes(dtype, checked_mul(rows, moe.expert_ffn_hidden / plan.tp));
  const std::int64_t probs = checked_mul(checked_mul(tokens, moe.experts), 4);
  return checked_add(checked_add(4 * stream, probs), checked_add(act, 3 * routed));
}

}  // namespace

std::int64_t prefill_activation_bytes(const ModelSpec& model, const Plan& plan,
                                      const InferenceWorkload& inference, int stage) {
  Plan forward_only = plan;
  forward_only.recompute = Recompute::none;
  const Dtype dtype = inference.weight_dtype == Dtype::fp32 ? Dtype::fp32 : Dtype::bf16;
  // the tokens the prefill computes: each prompt after its cached prefix (prefix caching)
  const std::int64_t new_tokens = inference.prompt_len - inference.prefix_tokens;
  const MicroBatchShape shape{inference.batch, new_tokens, dtype};
  const StageLayers layers = stage_layers(model, plan, stage);
  std::int64_t largest = 0;
  if (layers.dense > 0) largest = largest_point_bytes(model, 0, forward_only, shape);
  if (layers.moe > 0) largest = std::max(largest, largest_point_bytes(model, model.layers - 1, forward_only, shape));
  const std::int64_t tokens = checked_mul(inference.batch, new_tokens) / plan.cp;
  const std::int64_t stream = dtype_bytes(dtype, checked_mul(tokens, model.hidden));
  std::int64_t bytes = layers.total() > 0 ? checked_add(largest, 3 * stream) : 0;
  // (EP inside attention's TP group, plan.expert_tp < plan.tp, has no all-to-all)
  if (plan.ep > 1 && plan.etp() == plan.tp && layers.moe > 0)
    bytes = std::max(bytes, expert_parallel_combine_bytes(model, plan, tokens, stream, dtype));
  if (stage == plan.pp - 1)  // after the layers: their output and the last position's logits
    bytes = std::max(bytes, checked_add(stream, checked_mul(checked_mul(inference.batch, model.vocab) / plan.tp, 4)));
  return bytes;
}

namespace {

const ModelSpec* draft_model(const InferenceWorkload& w) {
  return w.speculative && w.speculative->draft_model ? &*w.speculative->draft_model : nullptr;
}

}  // namespace

OffloadedModuleBytes offloaded_module_bytes(const ModelSpec& model, const Plan& plan, Dtype weight_dtype,
                                            std::optional<Dtype> expert_dtype) {
  OffloadedModuleBytes b;
  b.dense_layer = inference_weight_bytes(layer_params_on_gpu(model, plan, false), weight_dtype);
  if (model.moe)
    b.moe_layer = inference_weight_bytes(layer_params_on_gpu(model, plan, true), weight_dtype, expert_dtype);
  const Dtype table = weight_dtype == Dtype::fp32 ? Dtype::fp32 : Dtype::bf16;  // kept in 16 bits, as inference_weight_bytes
  b.embedding = dtype_bytes(table, checked_mul(model.vocab, model.hidden) / plan.tp);
  return b;
}

std::int64_t inference_gpu_weight_bytes(const ModelSpec& model, const Plan& plan, const InferenceWorkload& inference,
                                        int stage) {
  if (!plan.offload_params)
    return inference_weight_bytes(stage_params(model, plan, stage), inference.weight_dtype, inference.experts_dtype());
  const OffloadedModuleBytes m = offloaded_module_bytes(model, plan, inference.weight_dtype, inference.experts_dtype());
  return 2 * std::max({m.dense_layer, m.moe_layer, m.embedding});
}

std::int64_t inference_offloaded_weight_bytes(const ModelSpec& model, const Plan& plan,
                                              const InferenceWorkload& inference, int stage) {
  return plan.offload_params ? inference_weight_bytes(stage_params(model, plan, stage), inference.weight_dtype,
                                                      inference.experts_dtype())
                             : 0;
}

std::int64_t draft_weight_bytes(const Plan& plan, const InferenceWorkload& inference) {
  const ModelSpec* draft = draft_model(inference);
  return draft ? inference_weight_bytes(stage_params(*draft, draft_plan(plan, *draft), 0), inference.weight_dtype) : 0;
}

std::int64_t draft_kv_cache_bytes(const Plan& plan, const InferenceWorkload& inference) {
  const ModelSpec* draft = draft_model(inference);
  return draft ? inference_kv_cache_bytes(*draft, draft_plan(plan, *draft), inference, 0) : 0;
}

std::int64_t draft_kv_bytes_per_token(const Plan& plan, const InferenceWorkload& inference) {
  const ModelSpec* draft = draft_model(inference);
  return draft ? kv_cache_bytes_per_token(*draft, draft->layers, plan.tp, inference.kv_dtype) : 0;
}

}  // namespace twinsim
