#pragma once
// PyTorch's async TP as it runs, not the ideal overlap. Under torch.compile, Inductor's
// micro_pipeline_tp pass (torch/_inductor/fx_passes/micro_pipeline_tp.py) replaces an
// all_gather feeding matmuls with fused_all_gather_matmul and a matmul feeding a
// reduce_scatter with fused_matmul_reduce_scatter (torch/distributed/_symmetric_memory):
// the matmul is split into tp chunks along the gathered (scattered) dimension, the chunk of
// the local shard runs while the first remote shard is copied, and each later chunk waits
// for its own copy (for the reduce-scatter, each chunk's partial result is sent as the next
// is computed). A collective hides only behind that one matmul, not behind the layer's other
// kernels: where it takes longer than the matmul, the rest is waited for on the compute
// stream (plan.tp_comm_overlap with stack.tp_overlap: matmul).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "models/layer_ops.hpp"
#include "sim/training/layer_costs.hpp"

namespace twinsim {

// A collective of `comm_s` micro-pipelined with a matmul of `matmul_s` over `tp` chunks:
// the copies run back to back, c / (tp - 1) each; chunk k of the matmul (g / tp) starts when
// chunk k - 1 is done and copy k has landed, so the pair ends at max(g, c + g / tp), and what
// the compute stream waits beyond the matmul is max(0, c - g (tp - 1) / tp). The reduce-
// scatter mirrors it (its first send waits for the first chunk, its last chunk's send ends
// the pair).
double micro_pipelined_exposed_s(double comm_s, double matmul_s, int tp);

// The TP collectives' time the compute stream waits for, a layer's forward and backward,
// each collective paired with the matmul beside it in the op list: an entering all-gather
// (kind: the forward's all_gather) with the GEMM after it, forward against its forward and
// backward (the reduce-scatter of the input's gradient) against its dgrad; a leaving
// reduce-scatter with the GEMM before it alike. `times` are `ops` priced, in the same order.
// recompute_s: the collectives the recompute runs again, each against its GEMM's recomputed
// share (full recompute: its whole forward, so recompute_s == fwd_s).
struct TpExposed {
  double fwd_s = 0, bwd_s = 0, recompute_s = 0;
};
TpExposed matmul_paired_tp_exposed(const std::vector<LayerOp>& ops, const std::vector<OpTime>& times, int tp,
                                   const StackSpec& stack);

// Whether async TP fuses the collective's backward with a matmul. A leaving reduce-scatter's
// backward all-gathers the output gradient into the dgrad of the GEMM before it. An entering
// all-gather's backward reduce-scatters the input gradient into the dgrad of the GEMM after it,
// but where the stack says it cannot (StackSpec::async_tp_entry_grad_unfused: PyTorch's).
bool micro_pipelined_backward(const LayerOp& op, const StackSpec& stack);

// How PyTorch's symmetric-memory ops run the GEMM a TP collective is fused with
// (stack.tp_overlap: symmetric_memory with plan.tp_comm_overlap; torch/distributed/
// _symmetric_memory/__init__.py). _fused_all_gather_matmul_impl calls torch.mm once per gathered
// shard and per weight it feeds (shard_consumer: for B in Bs: mm(shard, B)); so does
// _fused_matmul_reduce_scatter_impl per destination rank (chunk_producer: mm_out_op(shards[rank],
// B)), and then sums the tp stacked partials in one reduction kernel (reduce_fn = torch.sum over
// dim 0), reading the whole m x n and writing its 1/tp. A pass that is fused: `chunks` GEMMs of
// m / chunks rows; `partials_sum`: followed by that reduction.
struct FusedMatmulSplit {
  int fwd_chunks = 1, dgrad_chunks = 1;
  bool fwd_partials_sum = false, dgrad_partials_sum = false;
};
// The split of GEMM ops[gemm]: its forward where an all-gather feeds it (the entry) or it feeds a
// reduce-scatter (the exit); its dgrad where the backward collective is fused with it
// (micro_pipelined_backward: the exit's all-gather of the output gradient; the entry's
// reduce-scatter of the input gradient unless the stack leaves it unfused). No split otherwise.
FusedMatmulSplit symmetric_memory_split(const std::vector<LayerOp>& ops, std::size_t gemm, int tp,
                                        const StackSpec& stack);

// The bytes of a fused reduce-scatter's sum over the stacked partials of an m x `cols` result in
// `element_bytes` each: tp partials of m / tp rows read, one written.
double partials_sum_bytes(std::int64_t m, std::int64_t cols, int tp, double element_bytes);

// The bytes PyTorch's fused all-gather-matmul copies before its first chunk GEMM, on the compute
// stream (torch/distributed/_symmetric_memory/__init__.py, _pipelined_multi_all_gather_and_consume:
// copy_shard(dst=local_p2p_bufs, src=shard), then symm_mem.barrier, "giving up the chance to
// overlap "mv" and "b" with the first shard_consumer"): the local shard, 1/tp of a TP all-gather's
// gathered tensor, read once and written once; 0 for any other collective (the fused
// matmul-reduce-scatter's chunks are written into the buffer by their GEMMs).
double shard_staging_bytes(const Collective& c, int tp);

// With sequence parallelism a TP entry re-gathers its input for the weight gradient
// (LayerOp::bwd_regather) asynchronously, issued before the next GEMM's dgrad and waited for
// after it (Megatron-core tensor_parallel/layers.py, LinearWithGradAccumulationAndAsync
// Communication.backward: "we rely on CUDA_DEVICE_MAX_CONNECTIONS=1 to ensure that the gather
// is scheduled before the input gradient computation"; TE's LayerNormLinear backward alike):
// each entry's dgrad_s holds only what that dgrad does not hide, max(0, gather - dgrad).
// Idempotent: `times` may be priced again (OpTime::regather_exposed_s is replaced).
void hide_regathers(const std::vector<LayerOp>& ops, std::vector<OpTime>& times);

// The bytes the copy beside a blocking sequence-parallel collective moves (StackSpec::
// sp_layout_copies): the whole tensor read and written, the gathered output or the input to
// scatter, 2x the collective's payload (the full tensor); 0 for other collectives.
double sp_layout_copy_bytes(const Collective& c);

// The collective as it travels: a TP all-gather of the layers' fp8 GEMMs' inputs or output
// gradients in fp8 where the stack gathers them so (StackSpec::tp_float8_all_gather), its
// bytes those of the same elements at 1 byte; any other collective as the op list has it.
Collective tp_wire_collective(const Collective& c, const StackSpec& stack, Dtype gemm_dtype, Dtype activations);

}  // namespace twinsim
