#include "sim/training/eager_kernels.hpp"

#include "models/op_names.hpp"
#include "sim/cost/compute_cost.hpp"

namespace twinsim {

namespace {

// One memory-bound pass of `kernels` kernels moving `bytes` (each a launch; the bytes split
// evenly, for GPUs whose efficiency depends on a kernel's size).
double kernels_s(const GpuSpec& gpu, double bytes, int kernels, bool backward) {
  if (kernels == 0) return 0;
  ComputeOp op;
  op.kind = ComputeKind::elementwise;
  op.dtype = Dtype::fp32;
  op.backward = backward;
  op.bytes = bytes / kernels;
  return kernels * op_time_s(gpu, op);
}

// The weights a row's weight-sized kernels are counted per (its casts, their grads).
double row_weights(const LayerOp& op, const EagerExtents& e) {
  if (op.kind == OpKind::gemm) return static_cast<double>(op.k) * op.n * op.count;
  if (op.name == op_names::kEmbeddingLookup) return e.embedding_weights;
  return 0;
}

}  // namespace

EagerCost hf_eager_cost(const GpuSpec& gpu, const ModelSpec& model, const LayerOp& op, const EagerExtents& extents,
                        HfParams params) {
  EagerCost c;
  const double weights = row_weights(op, extents);
  for (const EagerKernels& k : hf_eager_kernels(params)) {
    if (k.row != op.name || !applies(k.variant, model)) continue;
    const double bytes = k.bytes_per_element * extents.of(k.extent, weights);
    if (!k.backward) {
      c.fwd_bytes += bytes, c.fwd_kernels += k.kernels;
    } else if (k.extent == EagerExtent::weights) {
      c.wgrad_bytes += bytes, c.wgrad_kernels += k.kernels;
    } else {
      c.dgrad_bytes += bytes, c.dgrad_kernels += k.kernels;
    }
  }
  c.covered = (op.kind == OpKind::norm || op.kind == OpKind::elementwise) && c.fwd_kernels > 0;
  c.fwd_s = kernels_s(gpu, c.fwd_bytes, c.fwd_kernels, false);
  c.dgrad_s = kernels_s(gpu, c.dgrad_bytes, c.dgrad_kernels, true);
  c.wgrad_s = kernels_s(gpu, c.wgrad_bytes, c.wgrad_kernels, true);
  return c;
}

EagerCost eager_fp32_loss_cost(const GpuSpec& gpu, const ModelSpec& model, double logits) {
  LayerOp loss;
  loss.name = op_names::kHeadLoss;
  loss.kind = OpKind::elementwise;
  EagerExtents extents;
  extents.vocab = logits;  // the census's loss rows count per logit (and per-token launches)
  return hf_eager_cost(gpu, model, loss, extents, HfParams::bf16);
}

EagerCost softmax_fallback_cost(const GpuSpec& gpu, double scores) {
  const SoftmaxFallback f;
  EagerCost c;
  c.fwd_kernels = f.fwd_kernels, c.dgrad_kernels = f.bwd_kernels;
  c.fwd_bytes = f.fwd_bytes_per_score * scores, c.dgrad_bytes = f.bwd_bytes_per_score * scores;
  c.fwd_s = kernels_s(gpu, c.fwd_bytes, c.fwd_kernels, false);
  c.dgrad_s = kernels_s(gpu, c.dgrad_bytes, c.dgrad_kernels, true);
  return c;
}

}  // namespace twinsim
