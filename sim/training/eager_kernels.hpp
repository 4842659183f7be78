#pragma once
// The kernels Hugging Face transformers' eager modeling code runs in a training step of a
// Llama-architecture model under PyTorch's standard mixed precision (fp32 parameters, bf16
// autocast), beyond the GEMMs and the attention kernel: the stack `layer_kernels: hf_eager`.
// Unlike Megatron's fused kernels (the op list's own), its residual stream is fp32, each
// RMSNorm runs as six kernels forward and sixteen backward, RoPE as five per tensor, and
// autocast casts every linear layer's weight and input to bf16 and their grads back.
//
// The census (eager_kernels.cpp) was counted, not estimated: scripts/hf_eager_census.py runs
// transformers' LlamaForCausalLM and logs every ATen op of a forward and backward with the
// op-list row that issued it. Its kernel count matches the profiled steps on an H200
// (scenarios/validation/microbench/measured_2026-11-26/h200/train_step_kernels_*.csv):
// 2,064 against 2,024 kernels per step for Llama-3.2-1B, 1,048 against 1,046 for Llama-3-8B's
// shapes with 8 layers (tests/unit/validation/measured_step_test.cpp).
#include <cstdint>
#include <span>
#include <string_view>

#include "hardware/gpu_spec.hpp"
#include "models/layer_ops.hpp"

namespace twinsim {

// What a census entry's bytes are counted per: an element of the tokens x hidden (fp32
// residual stream), x query width, x key/value width, x FFN width or x vocabulary tensor, or
// of the row's weights; `rows`: per-token or per-channel tensors (a launch, no bytes to speak of).
enum class EagerExtent { hidden, q, kv, ffn, vocab, weights, rows };

struct EagerKernels {
  std::string_view row;  // the op-list row (models/op_names.hpp) whose module issued them
  bool backward = false;
  EagerExtent extent = EagerExtent::hidden;
  double bytes_per_element = 0;  // read + written, summed over the kernels
  int kernels = 0;
};

// Every entry of the census (forward and backward, one layer and the model's head).
std::span<const EagerKernels> hf_eager_census();

// Elements of each extent on one GPU for one micro-batch (tp = cp = 1: the stack runs no model
// parallelism), the weights those of the row priced.
struct EagerExtents {
  double hidden = 0, q = 0, kv = 0, ffn = 0, vocab = 0;
  double embedding_weights = 0;  // the embedding table's (its grad's copy into .grad)
  double of(EagerExtent e, double row_weights) const;
};
EagerExtents eager_extents(const ModelSpec& model, const MicroBatchShape& shape);

// The census's kernels of one op-list row, priced as memory-bound kernels on `gpu`: the
// forward, the backward's share on the input gradient (dgrad) and on the weights' (wgrad:
// their casts back to fp32 and autograd's copy into .grad). `covered`: the census has
// the row's element-wise work (norms, RoPE, activation, residuals, loss), which then
// replaces the op list's fused kernel; GEMM and attention rows add their casts to their own time.
struct EagerCost {
  bool covered = false;
  double fwd_s = 0, dgrad_s = 0, wgrad_s = 0;
  double fwd_bytes = 0, dgrad_bytes = 0, wgrad_bytes = 0;
  int fwd_kernels = 0, dgrad_kernels = 0, wgrad_kernels = 0;
};
EagerCost hf_eager_cost(const GpuSpec& gpu, const LayerOp& op, const EagerExtents& extents);

}  // namespace twinsim
