#include "sim/memory/inference.hpp"

#include <algorithm>
#include <string_view>

#include "models/checked_math.hpp"
#include "models/layer_ops.hpp"
#include "models/op_names.hpp"
#include "sim/memory/stage_layers.hpp"

namespace twinsim {

std::int64_t kv_cache_bytes_per_token(const ModelSpec& model, std::int64_t layers, int tp, Dtype kv_dtype) {
  const std::int64_t elements = 2 * layers * kv_heads_per_gpu(model, tp) * model.head_dim;
  return dtype_bytes(kv_dtype, elements);
}

std::int64_t inference_kv_cache_bytes(const ModelSpec& model, const Plan& plan,
                                      const InferenceWorkload& inference, int stage) {
  const std::int64_t tokens = checked_mul(inference.batch, inference.prompt_len + inference.output_len);
  const std::int64_t layers = stage_layers(model, plan, stage).total();
  return checked_mul(kv_cache_bytes_per_token(model, layers, plan.tp, inference.kv_dtype), tokens);
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

}  // namespace

std::int64_t prefill_activation_bytes(const ModelSpec& model, const Plan& plan,
                                      const InferenceWorkload& inference, int stage) {
  Plan forward_only = plan;
  forward_only.recompute = Recompute::none;
  const Dtype dtype = inference.weight_dtype == Dtype::fp32 ? Dtype::fp32 : Dtype::bf16;
  const MicroBatchShape shape{inference.batch, inference.prompt_len, dtype};
  const StageLayers layers = stage_layers(model, plan, stage);
  std::int64_t largest = 0;
  if (layers.dense > 0) largest = largest_point_bytes(model, 0, forward_only, shape);
  if (layers.moe > 0) largest = std::max(largest, largest_point_bytes(model, model.layers - 1, forward_only, shape));
  const std::int64_t tokens = checked_mul(inference.batch, inference.prompt_len) / plan.cp;
  const std::int64_t stream = dtype_bytes(dtype, checked_mul(tokens, model.hidden));
  std::int64_t bytes = layers.total() > 0 ? checked_add(largest, 3 * stream) : 0;
  if (stage == plan.pp - 1)  // after the layers: their output and the last position's logits
    bytes = std::max(bytes, checked_add(stream, checked_mul(checked_mul(inference.batch, model.vocab) / plan.tp, 4)));
  return bytes;
}

}  // namespace twinsim
