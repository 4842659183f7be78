#include "models/hf_eager_census.hpp"

#include <array>

#include "models/op_names.hpp"

namespace twinsim {

namespace {

// Counted by scripts/hf_eager_census.py (transformers 5.24, torch 2.15, CPU autocast, whose
// op lists agree with CUDA's on this model): per op-list row and pass, the bytes its kernels
// read and write per element of the extent, and how many kernels. E.g. attn.norm forward:
// x.pow(2) 8, .mean(-1) 4, x * rsqrt 8, weight * x 8 = 28 bytes per fp32 element in 4 kernels,
// plus 2 per-token ones (+ eps, rsqrt); attn.qkv forward: 3 casts of its fp32 input to bf16 (6
// bytes each) and one of each weight. Regenerate with the script, never by hand.
constexpr std::array<EagerKernels, 59> kKernels = {{
    // every Llama-architecture layer
    {EagerVariant::all, op_names::kAttnCore, false, EagerExtent::kv, 18, 3},
    {EagerVariant::all, op_names::kAttnCore, false, EagerExtent::q, 6, 1},
    {EagerVariant::all, op_names::kAttnCore, true, EagerExtent::kv, 10, 2},
    {EagerVariant::all, op_names::kAttnCore, true, EagerExtent::q, 10, 2},
    {EagerVariant::all, op_names::kAttnNorm, false, EagerExtent::hidden, 28, 4},
    {EagerVariant::all, op_names::kAttnNorm, false, EagerExtent::rows, 0, 2},
    {EagerVariant::all, op_names::kAttnNorm, true, EagerExtent::hidden, 108, 12},
    {EagerVariant::all, op_names::kAttnNorm, true, EagerExtent::rows, 0, 4},
    {EagerVariant::all, op_names::kAttnProj, false, EagerExtent::weights, 6, 1},
    {EagerVariant::all, op_names::kAttnProj, true, EagerExtent::weights, 14, 2},
    {EagerVariant::all, op_names::kAttnQkv, false, EagerExtent::hidden, 18, 3},
    {EagerVariant::all, op_names::kAttnQkv, false, EagerExtent::weights, 6, 3},
    {EagerVariant::all, op_names::kAttnQkv, true, EagerExtent::hidden, 42, 5},
    {EagerVariant::all, op_names::kAttnQkv, true, EagerExtent::weights, 14, 6},
    {EagerVariant::all, op_names::kAttnResidual, false, EagerExtent::hidden, 10, 1},
    {EagerVariant::all, op_names::kAttnResidual, true, EagerExtent::hidden, 6, 1},
    {EagerVariant::all, op_names::kAttnRope, false, EagerExtent::kv, 30, 5},
    {EagerVariant::all, op_names::kAttnRope, false, EagerExtent::q, 30, 5},
    {EagerVariant::all, op_names::kAttnRope, true, EagerExtent::kv, 50, 11},
    {EagerVariant::all, op_names::kAttnRope, true, EagerExtent::q, 50, 11},
    {EagerVariant::all, op_names::kEmbeddingLookup, true, EagerExtent::weights, 8, 1},
    {EagerVariant::all, op_names::kHeadLogits, false, EagerExtent::hidden, 6, 1},
    {EagerVariant::all, op_names::kHeadLogits, false, EagerExtent::weights, 6, 1},
    {EagerVariant::all, op_names::kHeadLogits, true, EagerExtent::hidden, 6, 1},
    {EagerVariant::all, op_names::kHeadLogits, true, EagerExtent::weights, 14, 2},
    {EagerVariant::all, op_names::kHeadLoss, false, EagerExtent::vocab, 14, 2},
    {EagerVariant::all, op_names::kHeadLoss, true, EagerExtent::vocab, 22, 3},
    {EagerVariant::all, op_names::kHeadNorm, false, EagerExtent::hidden, 28, 4},
    {EagerVariant::all, op_names::kHeadNorm, false, EagerExtent::rows, 0, 2},
    {EagerVariant::all, op_names::kHeadNorm, true, EagerExtent::hidden, 96, 11},
    {EagerVariant::all, op_names::kHeadNorm, true, EagerExtent::rows, 0, 4},
    {EagerVariant::all, op_names::kMlpAct, false, EagerExtent::ffn, 10, 2},
    {EagerVariant::all, op_names::kMlpAct, true, EagerExtent::ffn, 18, 3},
    {EagerVariant::all, op_names::kMlpDown, false, EagerExtent::weights, 6, 1},
    {EagerVariant::all, op_names::kMlpDown, true, EagerExtent::weights, 14, 2},
    {EagerVariant::all, op_names::kMlpGateUp, false, EagerExtent::hidden, 12, 2},
    {EagerVariant::all, op_names::kMlpGateUp, false, EagerExtent::weights, 6, 2},
    {EagerVariant::all, op_names::kMlpGateUp, true, EagerExtent::hidden, 24, 3},
    {EagerVariant::all, op_names::kMlpGateUp, true, EagerExtent::weights, 14, 4},
    {EagerVariant::all, op_names::kMlpNorm, false, EagerExtent::hidden, 28, 4},
    {EagerVariant::all, op_names::kMlpNorm, false, EagerExtent::rows, 0, 2},
    {EagerVariant::all, op_names::kMlpNorm, true, EagerExtent::hidden, 108, 12},
    {EagerVariant::all, op_names::kMlpNorm, true, EagerExtent::rows, 0, 4},
    {EagerVariant::all, op_names::kMlpResidual, false, EagerExtent::hidden, 10, 1},
    {EagerVariant::all, op_names::kMlpResidual, true, EagerExtent::hidden, 6, 1},
    // + q, k, v biases (Qwen2): the biases' casts, their grads' sums over the tokens, casts and copies
    {EagerVariant::qkv_bias, op_names::kAttnQkv, false, EagerExtent::rows, 0, 3},
    {EagerVariant::qkv_bias, op_names::kAttnQkv, true, EagerExtent::kv, 4, 2},
    {EagerVariant::qkv_bias, op_names::kAttnQkv, true, EagerExtent::q, 2, 1},
    {EagerVariant::qkv_bias, op_names::kAttnQkv, true, EagerExtent::rows, 0, 6},
    // + QK-norm (Qwen3): an RMSNorm over each head's q and k, which leaves them fp32 for RoPE
    {EagerVariant::qk_norm, op_names::kAttnQkNorm, false, EagerExtent::kv, 38, 6},
    {EagerVariant::qk_norm, op_names::kAttnQkNorm, false, EagerExtent::q, 38, 6},
    {EagerVariant::qk_norm, op_names::kAttnQkNorm, false, EagerExtent::rows, 0, 4},
    {EagerVariant::qk_norm, op_names::kAttnQkNorm, true, EagerExtent::kv, 112, 14},
    {EagerVariant::qk_norm, op_names::kAttnQkNorm, true, EagerExtent::q, 112, 14},
    {EagerVariant::qk_norm, op_names::kAttnQkNorm, true, EagerExtent::rows, 0, 8},
    {EagerVariant::qk_norm, op_names::kAttnRope, false, EagerExtent::kv, 10, 0},
    {EagerVariant::qk_norm, op_names::kAttnRope, false, EagerExtent::q, 10, 0},
    {EagerVariant::qk_norm, op_names::kAttnRope, true, EagerExtent::kv, 10, -2},
    {EagerVariant::qk_norm, op_names::kAttnRope, true, EagerExtent::q, 10, -2},
}};

// Counted by the same script (torch.autograd.graph.saved_tensors_hooks, each storage once).
// A layer keeps 26 bytes per hidden element: its input (the fp32 residual stream) and the
// normed one for each of its two RMSNorms (4 + 4 each) and the five bf16 casts of the normed
// inputs of q, k, v, gate and up (2 each); 4 per query and per key/value element (SDPA's
// bf16 inputs and output); 8 per FFN element (gate, silu(gate), up, their product, bf16);
// 2 per weight (autocast's bf16 copies). The head keeps the final norm's 10, the log-softmax
// of the fp32 logits (4 per logit) and the output layer's bf16 copy.
constexpr std::array<EagerSaved, 10> kSaved = {{
    // every Llama-architecture layer
    {EagerVariant::all, true, EagerExtent::hidden, 10},
    {EagerVariant::all, true, EagerExtent::vocab, 4},
    {EagerVariant::all, true, EagerExtent::weights, 2},
    {EagerVariant::all, false, EagerExtent::ffn, 8},
    {EagerVariant::all, false, EagerExtent::hidden, 26},
    {EagerVariant::all, false, EagerExtent::kv, 4},
    {EagerVariant::all, false, EagerExtent::q, 4},
    {EagerVariant::all, false, EagerExtent::weights, 2},
    // + QK-norm (Qwen3): an RMSNorm over each head's q and k, which leaves them fp32 for RoPE
    {EagerVariant::qk_norm, false, EagerExtent::kv, 6},
    {EagerVariant::qk_norm, false, EagerExtent::q, 6},
}};

// The same census of a model loaded in bf16 without autocast (`--params bf16`: DeepSpeed's
// bf16 mode, FSDP with bf16 parameters): no casts of weights or inputs, a bf16 residual stream,
// each RMSNorm still computing in fp32 (to fp32, pow, mean, multiply, back to bf16, times the
// weight: 36 bytes per element in 6 kernels forward), the weights' grads copied into .grad.
constexpr std::array<EagerKernels, 43> kBf16Kernels = {{
    // every Llama-architecture layer
    {EagerVariant::all, op_names::kAttnCore, false, EagerExtent::kv, 8, 2},
    {EagerVariant::all, op_names::kAttnCore, true, EagerExtent::kv, 4, 1},
    {EagerVariant::all, op_names::kAttnCore, true, EagerExtent::q, 4, 1},
    {EagerVariant::all, op_names::kAttnNorm, false, EagerExtent::hidden, 36, 6},
    {EagerVariant::all, op_names::kAttnNorm, false, EagerExtent::rows, 0, 2},
    {EagerVariant::all, op_names::kAttnNorm, true, EagerExtent::hidden, 102, 14},
    {EagerVariant::all, op_names::kAttnNorm, true, EagerExtent::rows, 0, 4},
    {EagerVariant::all, op_names::kAttnProj, true, EagerExtent::weights, 4, 1},
    {EagerVariant::all, op_names::kAttnQkv, true, EagerExtent::hidden, 12, 2},
    {EagerVariant::all, op_names::kAttnQkv, true, EagerExtent::weights, 4, 3},
    {EagerVariant::all, op_names::kAttnResidual, false, EagerExtent::hidden, 6, 1},
    {EagerVariant::all, op_names::kAttnRope, false, EagerExtent::kv, 20, 5},
    {EagerVariant::all, op_names::kAttnRope, false, EagerExtent::q, 20, 5},
    {EagerVariant::all, op_names::kAttnRope, true, EagerExtent::kv, 30, 9},
    {EagerVariant::all, op_names::kAttnRope, true, EagerExtent::q, 30, 9},
    {EagerVariant::all, op_names::kEmbeddingLookup, true, EagerExtent::weights, 4, 1},
    {EagerVariant::all, op_names::kHeadLogits, true, EagerExtent::weights, 4, 1},
    {EagerVariant::all, op_names::kHeadLoss, false, EagerExtent::rows, 0, 3},
    {EagerVariant::all, op_names::kHeadLoss, false, EagerExtent::vocab, 14, 2},
    {EagerVariant::all, op_names::kHeadLoss, true, EagerExtent::vocab, 22, 3},
    {EagerVariant::all, op_names::kHeadNorm, false, EagerExtent::hidden, 36, 6},
    {EagerVariant::all, op_names::kHeadNorm, false, EagerExtent::rows, 0, 2},
    {EagerVariant::all, op_names::kHeadNorm, true, EagerExtent::hidden, 96, 13},
    {EagerVariant::all, op_names::kHeadNorm, true, EagerExtent::rows, 0, 4},
    {EagerVariant::all, op_names::kMlpAct, false, EagerExtent::ffn, 10, 2},
    {EagerVariant::all, op_names::kMlpAct, true, EagerExtent::ffn, 18, 3},
    {EagerVariant::all, op_names::kMlpDown, true, EagerExtent::weights, 4, 1},
    {EagerVariant::all, op_names::kMlpGateUp, true, EagerExtent::hidden, 6, 1},
    {EagerVariant::all, op_names::kMlpGateUp, true, EagerExtent::weights, 4, 2},
    {EagerVariant::all, op_names::kMlpNorm, false, EagerExtent::hidden, 36, 6},
    {EagerVariant::all, op_names::kMlpNorm, false, EagerExtent::rows, 0, 2},
    {EagerVariant::all, op_names::kMlpNorm, true, EagerExtent::hidden, 102, 14},
    {EagerVariant::all, op_names::kMlpNorm, true, EagerExtent::rows, 0, 4},
    {EagerVariant::all, op_names::kMlpResidual, false, EagerExtent::hidden, 6, 1},
    // + q, k, v biases (Qwen2): their grads' sums over the tokens, casts and copies
    {EagerVariant::qkv_bias, op_names::kAttnQkv, true, EagerExtent::kv, 4, 2},
    {EagerVariant::qkv_bias, op_names::kAttnQkv, true, EagerExtent::q, 2, 1},
    {EagerVariant::qkv_bias, op_names::kAttnQkv, true, EagerExtent::rows, 0, 3},
    // + QK-norm (Qwen3): an RMSNorm over each head's q and k
    {EagerVariant::qk_norm, op_names::kAttnQkNorm, false, EagerExtent::kv, 36, 6},
    {EagerVariant::qk_norm, op_names::kAttnQkNorm, false, EagerExtent::q, 36, 6},
    {EagerVariant::qk_norm, op_names::kAttnQkNorm, false, EagerExtent::rows, 0, 4},
    {EagerVariant::qk_norm, op_names::kAttnQkNorm, true, EagerExtent::kv, 96, 13},
    {EagerVariant::qk_norm, op_names::kAttnQkNorm, true, EagerExtent::q, 96, 13},
    {EagerVariant::qk_norm, op_names::kAttnQkNorm, true, EagerExtent::rows, 0, 8},
}};

// A bf16 layer keeps 16 bytes per hidden element (its RMSNorms' fp32 intermediates among
// them), 4 per query and key/value element, 8 per FFN element; the head 8 per hidden element
// and the fp32 log-softmax (4 per logit). No weight copies: the weights are bf16 already.
constexpr std::array<EagerSaved, 8> kBf16Saved = {{
    // every Llama-architecture layer
    {EagerVariant::all, true, EagerExtent::hidden, 8},
    {EagerVariant::all, true, EagerExtent::vocab, 4},
    {EagerVariant::all, false, EagerExtent::ffn, 8},
    {EagerVariant::all, false, EagerExtent::hidden, 16},
    {EagerVariant::all, false, EagerExtent::kv, 4},
    {EagerVariant::all, false, EagerExtent::q, 4},
    // + QK-norm (Qwen3): an RMSNorm over each head's q and k
    {EagerVariant::qk_norm, false, EagerExtent::kv, 6},
    {EagerVariant::qk_norm, false, EagerExtent::q, 6},
}};

}  // namespace

std::span<const EagerKernels> hf_eager_kernels(HfParams params) {
  if (params == HfParams::bf16) return kBf16Kernels;
  return kKernels;
}
std::span<const EagerSaved> hf_eager_saved(HfParams params) {
  if (params == HfParams::bf16) return kBf16Saved;
  return kSaved;
}

bool applies(EagerVariant v, const ModelSpec& model) {
  switch (v) {
    case EagerVariant::all: return true;
    case EagerVariant::qkv_bias: return model.qkv_bias;
    case EagerVariant::qk_norm: return model.qk_norm;
  }
  return false;
}

double EagerExtents::of(EagerExtent e, double weights) const {
  switch (e) {
    case EagerExtent::hidden: return hidden;
    case EagerExtent::q: return q;
    case EagerExtent::kv: return kv;
    case EagerExtent::ffn: return ffn;
    case EagerExtent::vocab: return vocab;
    case EagerExtent::weights: return weights;
    case EagerExtent::rows: return 0;
  }
  return 0;
}

EagerExtents eager_extents(const ModelSpec& model, const MicroBatchShape& shape) {
  const double tokens = static_cast<double>(shape.micro_batch) * shape.seq_len;
  const double h = static_cast<double>(model.hidden), kv_width = static_cast<double>(model.kv_heads) * model.head_dim;
  EagerExtents e;
  e.hidden = tokens * h;
  e.q = tokens * model.q_width();
  e.kv = tokens * kv_width;
  e.ffn = tokens * model.ffn_hidden;
  e.vocab = tokens * model.vocab;
  // q, k, v, o and the three FFN matrices (the census's scope: no biases, dense)
  e.layer_weights = h * (model.q_width() + 2 * kv_width) + model.q_width() * h + 3 * h * model.ffn_hidden;
  e.head_weights = e.embedding_weights = static_cast<double>(model.vocab) * h;
  return e;
}

}  // namespace twinsim
