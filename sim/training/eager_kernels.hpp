#pragma once
// The stack `layer_kernels: hf_eager` (or `hf_bf16`) priced: the element-wise kernels and casts
// Hugging Face's eager Llama layer runs (models/hf_eager_census) as memory-bound kernels on a
// GPU. Unlike Megatron's fused kernels (the op list's own), each RMSNorm runs as six kernels
// forward and twelve to sixteen backward, RoPE as five per tensor; under autocast the
// residual stream is fp32 and every linear layer's weight and input is cast to bf16 and their
// grads back, on a bf16 model (hf_bf16) the stream is bf16 and nothing is cast.
#include "hardware/gpu_spec.hpp"
#include "models/hf_eager_census.hpp"
#include "models/layer_ops.hpp"
#include "models/megatron_softmax.hpp"

namespace twinsim {

// The census's kernels of one op-list row: the forward, the backward's share on the input
// gradient (dgrad) and on the weights' (wgrad: their casts back to fp32 and autograd's copy
// into .grad). `covered`: the census has the row's element-wise work (norms, RoPE,
// activation, residuals, loss), which then replaces the op list's fused kernel; GEMM and
// attention rows add their casts to their own time.
struct EagerCost {
  bool covered = false;
  double fwd_s = 0, dgrad_s = 0, wgrad_s = 0;
  double fwd_bytes = 0, dgrad_bytes = 0, wgrad_bytes = 0;
  int fwd_kernels = 0, dgrad_kernels = 0, wgrad_kernels = 0;
};
EagerCost hf_eager_cost(const GpuSpec& gpu, const ModelSpec& model, const LayerOp& op, const EagerExtents& extents,
                        HfParams params);

// The loss left eager beside compiled layers (stack.loss_kernel eager_fp32 with the op list's
// fused layer kernels: torchtitan 2024-12 under training.compile, whose train.py keeps loss_fn
// uncompiled): the census's head.loss kernels of a bf16 model (logits.float(), log_softmax,
// nll_loss forward; nll_loss's and log_softmax's backward and the cast back) over `logits`,
// this rank's tokens x vocabulary shard.
EagerCost eager_fp32_loss_cost(const GpuSpec& gpu, const ModelSpec& model, double logits);

// Megatron's softmax fallback (models/megatron_softmax.hpp SoftmaxFallback) over `scores`
// elements: its kernels beyond the fused one's, fp32 memory-bound passes, forward and backward.
EagerCost softmax_fallback_cost(const GpuSpec& gpu, double scores);

}  // namespace twinsim
