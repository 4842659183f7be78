#include "sim/training/eager_kernels.hpp"

#include <array>

#include "models/op_names.hpp"
#include "sim/cost/compute_cost.hpp"

namespace twinsim {

namespace {

// Counted by scripts/hf_eager_census.py (transformers 5.24, torch 2.15, CPU autocast, whose
// op lists agree with CUDA's on this model): per op-list row and pass, the bytes its kernels
// read and write per element of the extent, and how many kernels. E.g. attn.norm forward:
// x.pow(2) 8, .mean(-1) 4, x * rsqrt 8, weight * x 8 = 28 bytes per fp32 element in 4 kernels,
// plus 2 per-token ones (+ eps, rsqrt); attn.qkv forward: 3 casts of its fp32 input to bf16 (6
// bytes each) and one of each weight. Regenerate with the script, never by hand.
constexpr std::array<EagerKernels, 45> kCensus = {{
    {op_names::kAttnCore, false, EagerExtent::kv, 18, 3},
    {op_names::kAttnCore, false, EagerExtent::q, 6, 1},
    {op_names::kAttnCore, true, EagerExtent::kv, 10, 2},
    {op_names::kAttnCore, true, EagerExtent::q, 10, 2},
    {op_names::kAttnNorm, false, EagerExtent::hidden, 28, 4},
    {op_names::kAttnNorm, false, EagerExtent::rows, 0, 2},
    {op_names::kAttnNorm, true, EagerExtent::hidden, 108, 12},
    {op_names::kAttnNorm, true, EagerExtent::rows, 0, 4},
    {op_names::kAttnProj, false, EagerExtent::weights, 6, 1},
    {op_names::kAttnProj, true, EagerExtent::weights, 14, 2},
    {op_names::kAttnQkv, false, EagerExtent::hidden, 18, 3},
    {op_names::kAttnQkv, false, EagerExtent::weights, 6, 3},
    {op_names::kAttnQkv, true, EagerExtent::hidden, 42, 5},
    {op_names::kAttnQkv, true, EagerExtent::weights, 14, 6},
    {op_names::kAttnResidual, false, EagerExtent::hidden, 10, 1},
    {op_names::kAttnResidual, true, EagerExtent::hidden, 6, 1},
    {op_names::kAttnRope, false, EagerExtent::kv, 30, 5},
    {op_names::kAttnRope, false, EagerExtent::q, 30, 5},
    {op_names::kAttnRope, true, EagerExtent::kv, 50, 11},
    {op_names::kAttnRope, true, EagerExtent::q, 50, 11},
    {op_names::kEmbeddingLookup, true, EagerExtent::weights, 8, 1},
    {op_names::kHeadLogits, false, EagerExtent::hidden, 6, 1},
    {op_names::kHeadLogits, false, EagerExtent::weights, 6, 1},
    {op_names::kHeadLogits, true, EagerExtent::hidden, 6, 1},
    {op_names::kHeadLogits, true, EagerExtent::weights, 14, 2},
    {op_names::kHeadLoss, false, EagerExtent::vocab, 14, 2},
    {op_names::kHeadLoss, true, EagerExtent::vocab, 22, 3},
    {op_names::kHeadNorm, false, EagerExtent::hidden, 28, 4},
    {op_names::kHeadNorm, false, EagerExtent::rows, 0, 2},
    {op_names::kHeadNorm, true, EagerExtent::hidden, 96, 11},
    {op_names::kHeadNorm, true, EagerExtent::rows, 0, 4},
    {op_names::kMlpAct, false, EagerExtent::ffn, 10, 2},
    {op_names::kMlpAct, true, EagerExtent::ffn, 18, 3},
    {op_names::kMlpDown, false, EagerExtent::weights, 6, 1},
    {op_names::kMlpDown, true, EagerExtent::weights, 14, 2},
    {op_names::kMlpGateUp, false, EagerExtent::hidden, 12, 2},
    {op_names::kMlpGateUp, false, EagerExtent::weights, 6, 2},
    {op_names::kMlpGateUp, true, EagerExtent::hidden, 24, 3},
    {op_names::kMlpGateUp, true, EagerExtent::weights, 14, 4},
    {op_names::kMlpNorm, false, EagerExtent::hidden, 28, 4},
    {op_names::kMlpNorm, false, EagerExtent::rows, 0, 2},
    {op_names::kMlpNorm, true, EagerExtent::hidden, 108, 12},
    {op_names::kMlpNorm, true, EagerExtent::rows, 0, 4},
    {op_names::kMlpResidual, false, EagerExtent::hidden, 10, 1},
    {op_names::kMlpResidual, true, EagerExtent::hidden, 6, 1},
}};

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

// The weights of a row the census counts weight-sized kernels per (its casts, their grads).
double row_weights(const LayerOp& op, const EagerExtents& e) {
  if (op.kind == OpKind::gemm) return static_cast<double>(op.k) * op.n * op.count;
  if (op.name == op_names::kEmbeddingLookup) return e.embedding_weights;
  return 0;
}

}  // namespace

std::span<const EagerKernels> hf_eager_census() { return kCensus; }

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
  EagerExtents e;
  e.hidden = tokens * model.hidden;
  e.q = tokens * model.q_width();
  e.kv = tokens * model.kv_heads * model.head_dim;
  e.ffn = tokens * model.ffn_hidden;
  e.vocab = tokens * model.vocab;
  e.embedding_weights = static_cast<double>(model.vocab) * model.hidden;
  return e;
}

EagerCost hf_eager_cost(const GpuSpec& gpu, const LayerOp& op, const EagerExtents& extents) {
  EagerCost c;
  const double weights = row_weights(op, extents);
  double fwd_bytes = 0, dgrad_bytes = 0, wgrad_bytes = 0;
  for (const EagerKernels& k : kCensus) {
    if (k.row != op.name) continue;
    const double bytes = k.bytes_per_element * extents.of(k.extent, weights);
    if (!k.backward) {
      fwd_bytes += bytes, c.fwd_kernels += k.kernels;
    } else if (k.extent == EagerExtent::weights) {
      wgrad_bytes += bytes, c.wgrad_kernels += k.kernels;
    } else {
      dgrad_bytes += bytes, c.dgrad_kernels += k.kernels;
    }
  }
  c.covered = (op.kind == OpKind::norm || op.kind == OpKind::elementwise) && c.fwd_kernels > 0;
  c.fwd_s = kernels_s(gpu, fwd_bytes, c.fwd_kernels, false);
  c.dgrad_s = kernels_s(gpu, dgrad_bytes, c.dgrad_kernels, true);
  c.wgrad_s = kernels_s(gpu, wgrad_bytes, c.wgrad_kernels, true);
  c.fwd_bytes = fwd_bytes, c.dgrad_bytes = dgrad_bytes, c.wgrad_bytes = wgrad_bytes;
  return c;
}

}  // namespace twinsim

