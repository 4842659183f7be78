#pragma once
// A Llama-architecture layer as Hugging Face transformers' modeling code runs it in PyTorch
// eager under the standard mixed precision (fp32 parameters, bf16/fp16 autocast), or on a
// model loaded in bf16 (DeepSpeed's bf16 mode): the element-wise kernels and casts it runs
// besides its GEMMs and attention, and what autograd keeps for the backward. The op list
// (models/layer_ops) is the same layer as Megatron's fused kernels run it; the stack's
// `layer_kernels: hf_eager` (autocast) or `hf_bf16` picks one of these.
//
// Counted, not estimated: scripts/hf_eager_census.py runs transformers' LlamaForCausalLM (and
// Qwen2's and Qwen3's, for what their q, k, v biases and QK-norm change) on
// the CPU and logs every ATen op of a forward and backward, and every tensor saved for the
// backward, with the op-list row that issued it. Its kernel count matches the profiled steps
// on an H200 (scenarios/validation/microbench/measured_2026-11-26/h200/train_step_kernels_*.csv):
// 2,064 against 2,024 per step for Llama-3.2-1B, 1,048 against 1,046 for Llama-3-8B's shapes
// with 8 layers (tests/unit/validation/measured_step_test.cpp).
#include <span>
#include <string_view>

#include "models/layer_ops.hpp"
#include "models/model_spec.hpp"

namespace twinsim {

// What a census entry's bytes are counted per: an element of the tokens x hidden (the fp32
// residual stream), x query width, x key/value width, x FFN width or x vocabulary tensor, or
// of the row's (or layer's, or head's) weights; `rows`: per-token or per-channel tensors (a
// launch, no bytes to speak of).
enum class EagerExtent { hidden, q, kv, ffn, vocab, weights, rows };

// Which layers an entry counts for: every one, or only those with the feature (the entry is
// what the feature's family adds to, or takes from, the Llama layer: its census less Llama's).
enum class EagerVariant { all, qkv_bias, qk_norm };
bool applies(EagerVariant v, const ModelSpec& model);

// The precision the model's code runs in: fp32 parameters under bf16/fp16 autocast (torch.amp,
// PyTorch's standard mixed precision), or parameters loaded in bf16 without autocast
// (`from_pretrained(..., dtype=torch.bfloat16)` trained by DeepSpeed's bf16 engine, or FSDP
// with bf16 parameters): no casts of weights or inputs, a bf16 residual stream.
enum class HfParams { fp32_autocast, bf16 };

// Kernels one op-list row runs in one pass: those of its module (forward) or of the autograd
// nodes its forward made (backward).
struct EagerKernels {
  EagerVariant variant = EagerVariant::all;
  std::string_view row;  // models/op_names.hpp
  bool backward = false;
  EagerExtent extent = EagerExtent::hidden;
  double bytes_per_element = 0;  // read + written, summed over the kernels
  int kernels = 0;
};
std::span<const EagerKernels> hf_eager_kernels(HfParams params);

// What autograd keeps from one layer's forward (or the head's: final norm, logits, loss) until
// its backward, each storage once.
struct EagerSaved {
  EagerVariant variant = EagerVariant::all;
  bool head = false;
  EagerExtent extent = EagerExtent::hidden;
  double bytes_per_element = 0;  // weights: per element of the layer's (the head's) weights
};
std::span<const EagerSaved> hf_eager_saved(HfParams params);

// Elements of each extent for one micro-batch on one GPU (the stack runs no model
// parallelism: tp = cp = 1).
struct EagerExtents {
  double hidden = 0, q = 0, kv = 0, ffn = 0, vocab = 0;
  double layer_weights = 0;      // one transformer layer's
  double head_weights = 0;       // the output layer's (vocab x hidden, tied or not)
  double embedding_weights = 0;  // the embedding table's
  double of(EagerExtent e, double weights) const;
};
EagerExtents eager_extents(const ModelSpec& model, const MicroBatchShape& shape);

}  // namespace twinsim
