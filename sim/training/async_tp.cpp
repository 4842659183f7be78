#include "sim/training/async_tp.hpp"

#include <algorithm>
#include <cstddef>

namespace twinsim {

double micro_pipelined_exposed_s(double comm_s, double matmul_s, int tp) {
  if (tp <= 1) return comm_s;
  return std::max(0.0, comm_s - matmul_s * (tp - 1) / tp);
}

bool micro_pipelined_backward(const LayerOp& op, const StackSpec& stack) {
  return op.fwd_comm.kind == CollectiveKind::reduce_scatter || !stack.async_tp_entry_grad_unfused;
}

double sp_layout_copy_bytes(const Collective& c) {
  const bool sequence_parallel = c.kind == CollectiveKind::all_gather || c.kind == CollectiveKind::reduce_scatter;
  return c.group == CommGroup::tp && sequence_parallel ? 2.0 * static_cast<double>(c.bytes) : 0.0;
}

double shard_staging_bytes(const Collective& c, int tp) {
  if (tp <= 1 || c.group != CommGroup::tp || c.kind != CollectiveKind::all_gather) return 0;
  return 2.0 * static_cast<double>(c.bytes) / tp;  // the shard read and written
}

Collective tp_wire_collective(const Collective& c, const StackSpec& stack, Dtype gemm_dtype, Dtype activations) {
  if (!stack.tp_float8_all_gather || gemm_dtype != Dtype::fp8 || c.group != CommGroup::tp ||
      c.kind != CollectiveKind::all_gather)
    return c;
  Collective fp8 = c;
  fp8.bytes = c.bytes / dtype_bytes(activations, 1);  // elements at 1 byte each
  return fp8;
}

namespace {

// The GEMM the TP collective at `at` is fused with: the next one for an all-gather into the
// TP region, the one before for a reduce-scatter out of it; none (ops.size()) otherwise.
std::size_t paired_gemm(const std::vector<LayerOp>& ops, std::size_t at) {
  const CollectiveKind kind = ops[at].fwd_comm.kind;
  if (kind == CollectiveKind::all_gather)
    for (std::size_t i = at + 1; i < ops.size(); ++i)
      if (ops[i].kind == OpKind::gemm) return i;
  if (kind == CollectiveKind::reduce_scatter)
    for (std::size_t i = at; i-- > 0;)
      if (ops[i].kind == OpKind::gemm) return i;
  return ops.size();
}

}  // namespace

FusedMatmulSplit symmetric_memory_split(const std::vector<LayerOp>& ops, std::size_t gemm, int tp,
                                        const StackSpec& stack) {
  FusedMatmulSplit split;
  if (tp <= 1 || ops[gemm].kind != OpKind::gemm) return split;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].kind != OpKind::collective || ops[i].fwd_comm.group != CommGroup::tp) continue;
    if (paired_gemm(ops, i) != gemm) continue;
    const bool exit = ops[i].fwd_comm.kind == CollectiveKind::reduce_scatter;
    split.fwd_chunks = tp;
    split.fwd_partials_sum = exit;
    if (micro_pipelined_backward(ops[i], stack)) {
      split.dgrad_chunks = tp;
      split.dgrad_partials_sum = !exit;  // the entry's input gradient reduce-scattered
    }
  }
  return split;
}

double partials_sum_bytes(std::int64_t m, std::int64_t cols, int tp, double element_bytes) {
  const double result = static_cast<double>(m) * static_cast<double>(cols) * element_bytes;
  return result + result / tp;
}

void hide_regathers(const std::vector<LayerOp>& ops, std::vector<OpTime>& times) {
  for (std::size_t i = 0; i < ops.size(); ++i) {
    OpTime& entry = times[i];
    if (entry.regather_s <= 0) continue;
    const std::size_t g = paired_gemm(ops, i);  // the entry's all-gather: the GEMM after it
    const double dgrad_s = g == ops.size() ? 0 : times[g].dgrad_s;
    const double exposed = std::max(0.0, entry.regather_s - dgrad_s);
    entry.dgrad_s += exposed - entry.regather_exposed_s;
    entry.regather_exposed_s = exposed;
  }
}

TpExposed matmul_paired_tp_exposed(const std::vector<LayerOp>& ops, const std::vector<OpTime>& times, int tp,
                                   const StackSpec& stack) {
  TpExposed exposed;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].kind != OpKind::collective || ops[i].fwd_comm.group != CommGroup::tp) continue;
    const OpTime& comm = times[i];
    const std::size_t g = paired_gemm(ops, i);
    const double again = comm.recomputed ? comm.fwd_s * comm.recompute_share : 0.0;
    if (g == ops.size()) {  // an all-reduce (TP without SP): nothing to fuse it with
      exposed.fwd_s += comm.fwd_s;
      exposed.bwd_s += comm.dgrad_s + comm.wgrad_s;
      exposed.recompute_s += again;
      continue;
    }
    exposed.fwd_s += micro_pipelined_exposed_s(comm.fwd_s, times[g].fwd_s, tp);
    const double backward_s = comm.dgrad_s + comm.wgrad_s;
    exposed.bwd_s += micro_pipelined_backward(ops[i], stack)
                         ? micro_pipelined_exposed_s(backward_s, times[g].dgrad_s, tp)
                         : backward_s;
    const double matmul_again = times[g].recomputed ? times[g].fwd_s * times[g].recompute_share : 0.0;
    if (comm.recomputed) exposed.recompute_s += micro_pipelined_exposed_s(again, matmul_again, tp);
  }
  return exposed;
}

}  // namespace twinsim
