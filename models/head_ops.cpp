#include "models/head_ops.hpp"

#include "models/checked_math.hpp"
#include "models/op_names.hpp"

namespace twinsim {

namespace {

LayerOp memory_op(std::string_view name, OpKind kind, std::string_view kernel, std::int64_t bytes) {
  LayerOp op;
  op.name = name;
  op.kind = kind;
  op.kernel = kernel;
  op.fwd_bytes = bytes;
  return op;
}

LayerOp tp_collective(std::string_view name, CollectiveKind fwd, CollectiveKind bwd, std::int64_t bytes) {
  LayerOp op;
  op.name = name;
  op.kind = OpKind::collective;
  op.fwd_comm = {fwd, CommGroup::tp, bytes};
  op.bwd_comm = {bwd, CommGroup::tp, bytes};
  return op;
}

}  // namespace

std::vector<LayerOp> build_embedding_ops(const ModelSpec& m, const Plan& p, const MicroBatchShape& mb) {
  const std::int64_t e = dtype_bytes(mb.dtype, 1);
  const std::int64_t tokens = checked_mul(mb.micro_batch, mb.seq_len) / p.cp;
  const std::int64_t activation = checked_mul(tokens * m.hidden, e);
  std::vector<LayerOp> ops;
  // gather one table row per token (+ position row), write the sum
  const int tables = m.position == Position::learned ? 2 : 1;
  ops.push_back(memory_op(op_names::kEmbeddingLookup, OpKind::elementwise, "embedding", (tables + 1) * activation));
  // vocab-parallel lookup: each TP rank holds V/t rows, partial sums meet in an
  // all-reduce (a reduce-scatter with sequence parallelism) (Megatron VocabParallelEmbedding)
  if (p.tp > 1)
    ops.push_back(tp_collective(op_names::kEmbeddingReduce,
                                p.sequence_parallel ? CollectiveKind::reduce_scatter : CollectiveKind::all_reduce,
                                CollectiveKind::none, activation));
  return ops;
}

std::vector<LayerOp> build_head_ops(const ModelSpec& m, const Plan& p, const MicroBatchShape& mb) {
  const std::int64_t e = dtype_bytes(mb.dtype, 1);
  const std::int64_t tokens = checked_mul(mb.micro_batch, mb.seq_len) / p.cp;
  const std::int64_t activation = checked_mul(tokens * m.hidden, e);
  const std::int64_t sp = p.sequence_parallel ? p.tp : 1;
  const std::int64_t vocab_shard = ceil_div(m.vocab, p.tp);
  std::vector<LayerOp> ops;
  ops.push_back(memory_op(op_names::kHeadNorm, OpKind::norm, norm_kernel_name(m), 2 * activation / sp));
  if (p.tp > 1)
    ops.push_back(tp_collective(op_names::kHeadEnter,
                                p.sequence_parallel ? CollectiveKind::all_gather : CollectiveKind::none,
                                p.sequence_parallel ? CollectiveKind::reduce_scatter : CollectiveKind::all_reduce,
                                activation));
  // logits = X W^T over this rank's vocabulary shard: 2 * tokens * h * V/t FLOPs
  // (the logits term of Narayanan et al. 2021, Appendix, Eq. 3)
  LayerOp logits;
  logits.name = op_names::kHeadLogits;
  logits.kind = OpKind::gemm;
  logits.m = tokens, logits.n = vocab_shard, logits.k = m.hidden;
  logits.fwd_flops = 2.0 * static_cast<double>(tokens) * vocab_shard * m.hidden;
  logits.dgrad_flops = logits.fwd_flops;
  logits.wgrad_flops = logits.fwd_flops;
  logits.weight_bytes = checked_mul(vocab_shard * m.hidden, e);
  logits.fwd_bytes = activation + logits.weight_bytes + checked_mul(tokens * vocab_shard, e);
  ops.push_back(logits);
  // softmax cross-entropy in fp32: read the logits, write fp32 probabilities for the
  // backward; vocab-parallel max and sum all-reduces move 2 floats per token
  ops.push_back(memory_op(op_names::kHeadLoss, OpKind::elementwise, "cross_entropy", checked_mul(tokens * vocab_shard, e + 4)));
  if (p.tp > 1) ops.push_back(tp_collective(op_names::kHeadLossReduce, CollectiveKind::all_reduce, CollectiveKind::none, tokens * 8));
  return ops;
}

}  // namespace twinsim
