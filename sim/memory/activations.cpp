#include "sim/memory/activations.hpp"

#include <algorithm>
#include <string_view>
#include <vector>

#include "models/checked_math.hpp"
#include "models/op_names.hpp"
#include "sim/memory/stage_layers.hpp"

namespace twinsim {

Dtype activation_dtype(Dtype precision) {
  switch (precision) {
    case Dtype::fp32:
    case Dtype::tf32: return Dtype::fp32;
    case Dtype::fp16: return Dtype::fp16;
    default: return Dtype::bf16;
  }
}

namespace {

std::int64_t kept_bytes(const ModelSpec& m, std::int64_t layer, const Plan& plan, const MicroBatchShape& shape) {
  return saved_bytes(build_layer_ops(m, layer, plan, shape));
}

bool is_interleaved(const Plan& plan) {
  return plan.schedule == Schedule::interleaved && plan.virtual_stages > 1;
}

// Chunks a rank holds without interleaving: DualPipe's two (its stage's and the mirror's).
std::int64_t chunks_held(const Plan& plan) { return plan.schedule == Schedule::dualpipe ? 2 : 1; }

// Sequence-parallel divisor of tensors outside the TP region.
std::int64_t sp_divisor(const Plan& plan) { return plan.sequence_parallel ? plan.tp : 1; }

std::int64_t local_tokens(const Plan& plan, const MicroBatchShape& shape) {
  return checked_mul(shape.micro_batch, shape.seq_len) / plan.cp;
}

std::int64_t saved_named(const LayerOp& op, std::string_view name) {
  std::int64_t total = 0;
  for (const SavedTensor& t : op.saved)
    if (t.name == name) total = checked_add(total, t.bytes);
  return total;
}

std::int64_t saved_all(const LayerOp& op) {
  std::int64_t total = 0;
  for (const SavedTensor& t : op.saved) total = checked_add(total, t.bytes);
  return total;
}

const LayerOp* find_op(const std::vector<LayerOp>& ops, std::string_view name) {
  for (const LayerOp& op : ops)
    if (op.name == name) return &op;
  return nullptr;
}

const LayerOp* find_op(const std::vector<LayerOp>& ops, std::string_view prefix, std::string_view a,
                       std::string_view b) {
  for (const LayerOp& op : ops)
    if (op.name.substr(0, prefix.size()) == prefix &&
        (op.name.substr(prefix.size()) == a || op.name.substr(prefix.size()) == b))
      return &op;
  return nullptr;
}

// The grad of a layer's output and, with SP, its all-gather.
struct IncomingGrad {
  std::int64_t dy = 0, gathered = 0, full = 0;  // full: one [s, b, h] of the activation dtype
};

IncomingGrad incoming_grad(const ModelSpec& m, const Plan& plan, const MicroBatchShape& shape) {
  IncomingGrad g;
  g.full = dtype_bytes(shape.dtype, checked_mul(local_tokens(plan, shape), m.hidden));
  g.dy = g.full / sp_divisor(plan);
  g.gathered = sp_divisor(plan) > 1 ? g.full : 0;
  return g;
}

// The routed rows [rows, h] the experts' down GEMM writes: the rows the combine keeps where it
// weights them by the probabilities, else (MicroBatchShape::moe_probs_in_activation) the GEMM's
// own shape at its weight's bytes per element.
std::int64_t routed_rows_bytes(const LayerOp& down) {
  if (const std::int64_t kept = saved_named(down, "output"); kept > 0) return kept;
  const std::int64_t element = down.weight_bytes / checked_mul(checked_mul(down.k, down.n), down.count);
  return checked_mul(checked_mul(checked_mul(down.m, down.count), down.n), element);
}

// The MLP half of a MoE layer's backward, tensor by tensor as an eager framework frees
// them (exec/model/moe_block.cpp runs this order): the shared experts' FFN (its activation
// grads, then the norm output's grad dn for its up dgrad), the combine (the probabilities'
// fp32 grad and the experts' output grad; their saved output goes), then the routed
// experts' FFN the same way (with expert parallelism, the output grads' crossing between).
// The most it holds beyond the layer's kept tensors.
// With plan.fp8_moe_act_cache the routed activation's backward holds its 16-bit gate and up cast
// back from fp8, their two grads and the output grad from the down GEMM: five 16-bit [rows, ffn].
std::int64_t moe_backward_transient(const std::vector<LayerOp>& ops, const IncomingGrad& g, const Plan& plan,
                                    const MicroBatchShape& shape) {
  const LayerOp* router = find_op(ops, op_names::kMoeRouter);
  const LayerOp* routed_down = find_op(ops, "moe.experts.", "fc2", "down");
  const LayerOp* routed_act = find_op(ops, op_names::kMoeExpertsAct);
  const LayerOp* shared_act = find_op(ops, op_names::kMoeSharedAct);
  const LayerOp* shared_down = find_op(ops, "moe.shared.", "fc2", "down");
  const bool gated = routed_act->saved.size() > 1;  // SwiGLU keeps gate and up: two grads
  const std::int64_t grads = gated ? 2 : 1;
  std::int64_t level = g.dy, peak = 0;
  if (shared_act && shared_down) {
    const std::int64_t inner = saved_named(*shared_down, "input"), kept = saved_all(*shared_act) + inner;
    peak = std::max(level + grads * inner, level + grads * inner - kept + g.full);  // its act grads; then dn
    level += g.full - kept;
  } else {
    level += g.full;  // dn starts as zeros
  }
  const std::int64_t rows_h = routed_rows_bytes(*routed_down), rows_f = saved_named(*routed_down, "input");
  peak = std::max(peak, level + saved_named(*router, "probs") + rows_h);  // the combine's grads
  level += saved_named(*router, "probs");
  // expert parallelism: the rows' grads cross to their experts' ranks through a send and a
  // receive tensor of the routed rows each (the forward's crossings hold less)
  if (find_op(ops, op_names::kMoeDispatch)) peak = std::max(peak, level + 2 * rows_h);
  if (plan.fp8_moe_act_cache) {  // the activation's 16-bit working set (§3.3.2 (2)'s recomputation)
    const std::int64_t inner =
        dtype_bytes(shape.dtype, checked_mul(checked_mul(routed_down->m, routed_down->count), routed_down->k));
    peak = std::max(peak, level - rows_h + 5 * inner);
  }
  // down's dgrad, then with its output grad and act freed the activation's grads
  return std::max({peak, level + rows_f, level - rows_h + grads * rows_f});
}

// The activation's backward on top of the layer's kept tensors: the grads of the up GEMM's outputs
// (16-bit, [tokens, 2 ffn] under SwiGLU); with plan.fp8_activation_input also the 16-bit copy its
// backward casts the fp8 input back into (SwiGLUFunction.backward, input.to(ctx.ori_input_dtype)).
std::int64_t activation_backward(const LayerOp& up, const LayerOp& act, const Plan& plan,
                                 const MicroBatchShape& shape) {
  if (!plan.fp8_activation_input) return saved_all(act);
  const std::int64_t outputs = dtype_bytes(shape.dtype, checked_mul(checked_mul(up.m, up.n), up.count));
  return 2 * outputs;
}

// The core attention's backward: dO and dQ, dK, dV (16-bit, as big as the 16-bit Q, K, V). Under fp8
// attention (the core keeps "out") TE's FusedAttnFunc.backward quantises dO (d_out_fp8, 1 byte),
// cuDNN writes dQ, dK, dV in fp8 and TE dequantises them beside (transformer_engine/pytorch/
// attention.py v2.2): 1.5 x (dO + dQKV).
std::int64_t core_backward(const LayerOp& core, std::int64_t d_o, std::int64_t kept_qkv, const MicroBatchShape& shape) {
  if (saved_named(core, "out") == 0) return d_o + kept_qkv;
  const std::int64_t d_qkv = checked_mul(kept_qkv / dtype_bytes(Dtype::fp8, 1), dtype_bytes(shape.dtype, 1));
  return d_o + d_o / dtype_bytes(shape.dtype, 1) + d_qkv + kept_qkv;  // 16-bit grads and their fp8 twins
}

}  // namespace

std::int64_t layer_backward_bytes(const ModelSpec& model, std::int64_t layer, const Plan& plan,
                                  const MicroBatchShape& shape) {
  Plan no_recompute = plan;
  no_recompute.recompute = Recompute::none;
  const std::vector<LayerOp> ops = build_layer_ops(model, layer, no_recompute, shape);
  const std::int64_t kept = kept_bytes(model, layer, plan, shape);
  const IncomingGrad g = incoming_grad(model, plan, shape);
  std::int64_t attention_saved = 0, all_saved = 0;
  for (const LayerOp& op : ops) {
    const std::int64_t b = saved_all(op);
    all_saved = checked_add(all_saved, b);
    if (op.name.substr(0, 5) == "attn.") attention_saved = checked_add(attention_saved, b);
  }
  // MLP (dense, or MoE's router and experts)
  std::int64_t mlp = find_op(ops, op_names::kMoeRouter) ? moe_backward_transient(ops, g, plan, shape) : 0;
  for (std::string_view prefix : {"mlp."}) {
    const LayerOp* up = find_op(ops, prefix, "fc1", "gate_up");
    const LayerOp* act = find_op(ops, prefix, "act", "act");
    const LayerOp* down = find_op(ops, prefix, "fc2", "down");
    if (!up || !act || !down) continue;
    const std::int64_t down_input = saved_named(*down, "input");
    const std::int64_t up_input_grad = dtype_bytes(shape.dtype, checked_mul(checked_mul(up->m, up->k), up->count));
    mlp = std::max(mlp, g.dy + std::max({g.gathered + down_input, activation_backward(*up, *act, plan, shape),
                                         up_input_grad - down_input}));
  }
  // attention
  std::int64_t attention = 0;
  const LayerOp* core = find_op(ops, op_names::kAttnCore);
  const LayerOp* proj = find_op(ops, op_names::kAttnProj);
  std::int64_t replay = 0;
  if (core && proj) {
    const std::int64_t o = saved_named(*proj, "input") + saved_named(*core, "out");    // O as kept
    const std::int64_t d_o = dtype_bytes(shape.dtype, checked_mul(proj->m, proj->k));  // its 16-bit grad
    const std::int64_t qkv = saved_named(*core, "q") + saved_named(*core, "k") + saved_named(*core, "v");
    const std::int64_t dp = saved_named(*core, "softmax_out");  // 0 with flash attention
    attention = g.dy + std::max({g.gathered + d_o, core_backward(*core, d_o, qkv, shape) + dp, g.full - o});
    if (plan.recompute == Recompute::selective) replay = d_o;  // the recomputed core's 16-bit O
  }
  // full and op-level recompute rebuild the layer's tensors before its backward
  const bool rebuilt = plan.recompute == Recompute::full || plan.recompute == Recompute::selective_op;
  const std::int64_t mlp_point = (rebuilt ? all_saved : kept) + mlp;
  const std::int64_t attention_point = attention_saved + replay + attention;
  return std::max<std::int64_t>(0, std::max(mlp_point, attention_point) - kept);
}

std::int64_t head_backward_bytes(const ModelSpec& model, const Plan& plan, const MicroBatchShape& shape) {
  return incoming_grad(model, plan, shape).full;
}

std::int64_t eager_fp32_loss_transient_bytes(std::int64_t logits, bool vocab_parallel) {
  const double per_logit =
      vocab_parallel ? std::max(kEagerFp32LossParallelForwardBytesPerLogit, kEagerFp32LossParallelBackwardBytesPerLogit)
                     : kEagerFp32LossBackwardBytesPerLogit;
  return checked_mul(logits, static_cast<std::int64_t>(per_logit));
}

LayerActivations layer_activations(const ModelSpec& model, const Plan& plan, const MicroBatchShape& shape) {
  Plan no_recompute = plan;
  no_recompute.recompute = Recompute::none;
  LayerActivations a;
  const std::int64_t dense = some_dense_layer(model);
  a.dense = kept_bytes(model, dense, plan, shape);
  if (plan.recompute != Recompute::none)
    a.dense_recompute = kept_bytes(model, dense, no_recompute, shape) - a.dense;
  a.dense_backward = layer_backward_bytes(model, dense, plan, shape);
  if (model.moe) {
    const std::int64_t moe = some_moe_layer(model);
    a.moe = kept_bytes(model, moe, plan, shape);
    if (plan.recompute != Recompute::none) a.moe_recompute = kept_bytes(model, moe, no_recompute, shape) - a.moe;
    a.moe_backward = layer_backward_bytes(model, moe, plan, shape);
  }
  return a;
}

std::int64_t chunks_in_flight(const Plan& plan, int stage, std::int64_t micro_batches) {
  const std::int64_t m = std::max<std::int64_t>(1, micro_batches);
  if (plan.schedule == Schedule::gpipe) return m;
  // DualPipe's README table: PP + 1 chunks a rank (pipeline_schedule_test: peak_in_flight)
  if (plan.schedule == Schedule::dualpipe) return std::min<std::int64_t>(plan.pp + 1, m);
  const std::int64_t extra = plan.moe_a2a_overlap ? 1 : 0;  // combined 1F1B's one more warm-up forward
  if (!is_interleaved(plan)) return std::min<std::int64_t>(plan.pp - stage + extra, m);
  const std::int64_t v = plan.virtual_stages;
  const std::int64_t warmup = static_cast<std::int64_t>(plan.pp - stage - 1) * 2 + (v - 1) * plan.pp;
  return std::min(warmup + 1 + extra, m * v);
}

std::int64_t embedding_activation_bytes(const ModelSpec& model, const Plan& plan, const MicroBatchShape& shape) {
  if (model.dropout <= 0) return 0;
  return checked_mul(local_tokens(plan, shape), model.hidden) / sp_divisor(plan);  // 1-byte mask
}

std::int64_t output_activation_bytes(const ModelSpec& model, const Plan& plan, const StackSpec& stack,
                                     const MicroBatchShape& shape, std::int64_t moe_layer_kept) {
  const std::int64_t tokens = local_tokens(plan, shape);
  const std::int64_t stream = dtype_bytes(shape.dtype, checked_mul(tokens, model.hidden)) / sp_divisor(plan);
  // Liger's fused_linear_cross_entropy_forward keeps grad_input (the stream's size, where the
  // output layer's input was) and grad_weight (zeros_like(weight)) for its backward; its
  // logits live one chunk at a time inside the forward (BT / ceil(V / H) tokens, about one
  // stream), below the backward's working set
  const std::int64_t logits = stack.fused_linear_loss()
                                  ? dtype_bytes(shape.dtype, checked_mul(model.vocab, model.hidden) / plan.tp)
                                  : checked_mul(checked_mul(tokens, model.vocab) / plan.tp, 4);
  // each multi-token-prediction module (DeepSeek-V3 §2.2) keeps its two normed inputs
  // (the projection's [2h] input), its block's saved tensors, its norm and its own logits
  if (model.mtp_layers > 0 && moe_layer_kept < 0) moe_layer_kept = kept_bytes(model, model.layers, plan, shape);
  const std::int64_t mtp = model.mtp_layers > 0 ? 4 * stream + moe_layer_kept + logits : 0;
  return 2 * stream + logits + checked_mul(mtp, model.mtp_layers);
}

MicroBatchShape training_shape(const TrainingWorkload& training, const StackSpec& stack) {
  const bool quantized = training.precision == Dtype::fp8 || is_fp4(training.precision);
  return {training.micro_batch,
          training.seq_len,
          activation_dtype(training.precision),
          quantized ? std::optional<Dtype>(training.precision) : std::nullopt,
          training.lora,
          stack.moe_probs_in_activation,
          stack.moe_padding_copies};
}

namespace {

// The micro-batches whose embedding extras the first stage keeps (Korthikanti §4.3
// multiplies by p under 1F1B) and whose head tensors the last stage keeps (GPipe: all).
std::int64_t first_in_flight(const Plan& plan, std::int64_t m) {
  return plan.schedule == Schedule::gpipe ? m : std::min<std::int64_t>(plan.pp, m);
}
std::int64_t last_in_flight(const Plan& plan, std::int64_t m) { return plan.schedule == Schedule::gpipe ? m : 1; }

}  // namespace

std::int64_t stage_extra_activation_bytes(const ModelSpec& model, const Plan& plan, const StackSpec& stack,
                                          const TrainingWorkload& training, int stage, std::int64_t moe_layer_kept) {
  const MicroBatchShape shape = training_shape(training, stack);
  const std::int64_t m = std::max<std::int64_t>(1, training.micro_batches(plan.dp));
  std::int64_t bytes = 0;
  if (stage == 0) bytes += checked_mul(embedding_activation_bytes(model, plan, shape), first_in_flight(plan, m));
  if (stage == plan.pp - 1)
    bytes = checked_add(bytes, checked_mul(output_activation_bytes(model, plan, stack, shape, moe_layer_kept), last_in_flight(plan, m)));
  return bytes;
}

std::int64_t torch_cp_backward_bytes(const ModelSpec& model, const Plan& plan, const StackSpec& stack,
                                     const MicroBatchShape& shape) {
  if (plan.cp < 2 || stack.cp_exchange != kTorchAllGatherCpExchange) return 0;
  const std::int64_t n = checked_mul(local_tokens(plan, shape), heads_per_gpu(model, plan.tp) * model.qk_head_dim());
  const std::int64_t kv_16 = dtype_bytes(shape.dtype, checked_mul(2 * plan.cp + 2, n));  // gathered K,V and the cat
  return checked_add(kv_16, checked_mul(n, std::int64_t{4 + 3 * 8}));                    // fp32 dQ; dK,dV thrice
}

std::int64_t stage_backward_bytes(const ModelSpec& model, const Plan& plan, const StackSpec& stack,
                                  const TrainingWorkload& training, std::int64_t layer_backward, bool has_layers,
                                  int stage, std::int64_t moe_layer_kept) {
  const MicroBatchShape shape = training_shape(training, stack);
  const bool last = stage == plan.pp - 1;
  std::int64_t extra = 0;
  if (last) extra = head_backward_bytes(model, plan, shape);
  if (last && stack.eager_fp32_loss())  // the loss's fp32 temporaries, at the forward's end or the backward's start
    extra = std::max(extra, eager_fp32_loss_transient_bytes(checked_mul(local_tokens(plan, shape), model.vocab) / plan.tp,
                                                            plan.tp > 1));
  if (has_layers)  // the head of the micro-batch being backpropagated is gone by then
    extra = std::max(extra, layer_backward + torch_cp_backward_bytes(model, plan, stack, shape) -
                                (last ? output_activation_bytes(model, plan, stack, shape, moe_layer_kept) : 0));
  return extra;
}

std::int64_t offloaded_activation_bytes(const ModelSpec& model, const Plan& plan, const LayerActivations& per_layer) {
  std::int64_t bytes = 0;
  for (std::int64_t l = 0; l < std::min<std::int64_t>(plan.offload_activations_layers, model.layers); ++l)
    bytes = checked_add(bytes, model.is_moe_layer(l) ? per_layer.moe : per_layer.dense);
  return bytes;
}

std::int64_t training_activation_bytes(const ModelSpec& model, const Plan& plan, const StackSpec& stack,
                                       const TrainingWorkload& training, const LayerActivations& per_layer,
                                       int stage) {
  const std::int64_t m = std::max<std::int64_t>(1, training.micro_batches(plan.dp));
  const StageLayers layers = stage_layers(model, plan, stage);
  const std::int64_t v = is_interleaved(plan) ? plan.virtual_stages : chunks_held(plan);
  // All chunks of a stage hold the same layers on average: bytes of the stage's layers
  // per micro-batch, times chunks in flight, over the chunks per stage.
  const std::int64_t per_microbatch =
      checked_add(checked_mul(layers.dense, per_layer.dense), checked_mul(layers.moe, per_layer.moe));
  std::int64_t bytes = checked_mul(per_microbatch, chunks_in_flight(plan, stage, m)) / v;
  if (plan.offload_activations_layers > 0) {  // one stage, one micro-batch in flight (validated)
    // At the forward's end the GPU holds the layers it keeps; each offloaded layer's copy was
    // waited for by the layer after next, but the last one's is still in flight when only one
    // layer follows it. The backward's double buffer holds two layers, the kept ones gone.
    const std::int64_t kept_layers = model.layers - plan.offload_activations_layers;
    const std::int64_t last = std::min<std::int64_t>(plan.offload_activations_layers, model.layers) - 1;
    const std::int64_t in_flight = kept_layers < 2 ? (model.is_moe_layer(last) ? per_layer.moe : per_layer.dense) : 0;
    bytes -= offloaded_activation_bytes(model, plan, per_layer) - in_flight;
  }
  const std::int64_t moe_kept = model.moe ? per_layer.moe : -1;  // the MTP block's, already built
  bytes = checked_add(bytes, stage_extra_activation_bytes(model, plan, stack, training, stage, moe_kept));
  // The first backward's working set (one layer at a time) comes on top: the stage's last
  // layer's, or a leading dense layer's (a MoE model's dense layers come first), whose
  // backward runs after the micro-batch's MoE layers on the stage have freed theirs.
  std::int64_t backward = 0;
  if (layers.moe > 0) backward = per_layer.moe_backward;
  if (layers.dense > 0) backward = std::max(backward, per_layer.dense_backward - checked_mul(layers.moe, per_layer.moe));
  return checked_add(bytes, stage_backward_bytes(model, plan, stack, training, backward, layers.total() > 0, stage, moe_kept));
}

}  // namespace twinsim
