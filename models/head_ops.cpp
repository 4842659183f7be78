#include "models/head_ops.hpp"

#include <map>
#include <mutex>
#include <string>

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
  ops.push_back(memory_op(op_names::kEmbeddingLookup, OpKind::elementwise, kernel_names::kEmbedding, (tables + 1) * activation));
  // vocab-parallel lookup: each TP rank holds V/t rows, partial sums meet in an
  // all-reduce (a reduce-scatter with sequence parallelism) (Megatron VocabParallelEmbedding);
  // with sequence parallelism the backward all-gathers the output's gradient, so every rank
  // scatters the whole of it into its rows (the reduce-scatter's backward, Korthikanti §4.2.2)
  if (p.tp > 1)
    ops.push_back(tp_collective(op_names::kEmbeddingReduce,
                                p.sequence_parallel ? CollectiveKind::reduce_scatter : CollectiveKind::all_reduce,
                                p.sequence_parallel ? CollectiveKind::all_gather : CollectiveKind::none, activation));
  return ops;
}

namespace {

// logits = X W^T over this rank's vocabulary shard: 2 * tokens * h * V/t FLOPs (the logits
// term of Narayanan et al. 2021, Appendix, Eq. 3), then softmax cross-entropy in fp32: read
// the logits, write fp32 probabilities for the backward; the vocab-parallel all-reduces move
// 3 floats per token: the row max, the target's logit and the sum of exponentials
// (Megatron-core tensor_parallel/cross_entropy.py, one all-reduce each; the executor's
// loss.cpp sends the last two together).
void add_logits_and_loss(std::vector<LayerOp>& ops, std::string_view logits_name, std::string_view loss_name,
                         std::string_view reduce_name, const ModelSpec& m, const Plan& p, std::int64_t tokens,
                         std::int64_t e) {
  const std::int64_t activation = checked_mul(tokens * m.hidden, e);
  const std::int64_t vocab_shard = ceil_div(m.vocab, p.tp);
  LayerOp logits;
  logits.name = logits_name;
  logits.kind = OpKind::gemm;
  logits.m = tokens, logits.n = vocab_shard, logits.k = m.hidden;
  logits.fwd_flops = 2.0 * static_cast<double>(tokens) * vocab_shard * m.hidden;
  logits.dgrad_flops = logits.fwd_flops;
  logits.wgrad_flops = logits.fwd_flops;
  logits.weight_bytes = checked_mul(vocab_shard * m.hidden, e);
  logits.fwd_bytes = activation + logits.weight_bytes + checked_mul(tokens * vocab_shard, e);
  ops.push_back(logits);
  ops.push_back(memory_op(loss_name, OpKind::elementwise, kernel_names::kCrossEntropy, checked_mul(tokens * vocab_shard, e + 4)));
  if (p.tp > 1) ops.push_back(tp_collective(reduce_name, CollectiveKind::all_reduce, CollectiveKind::none, tokens * 12));
}

// "mtp." + a layer op's name, kept for the life of the program (op names are views).
std::string_view mtp_name(std::string_view name) {
  static std::mutex lock;
  static std::map<std::string, std::string, std::less<>> names;
  const std::lock_guard<std::mutex> guard(lock);
  auto it = names.find(name);
  if (it == names.end()) it = names.emplace(std::string(name), op_names::kMtpPrefix + std::string(name)).first;
  return it->second;
}

// DeepSeek-V3 §2.2, Fig. 3, per module: RMSNorm the main model's last hidden state and
// the next token's embedding, project their concatenation [2h -> h], run one transformer
// block (an MoE layer), then the shared output head and its own cross-entropy loss.
void add_mtp_modules(std::vector<LayerOp>& ops, const ModelSpec& m, const Plan& p, const MicroBatchShape& mb,
                     std::int64_t tokens, std::int64_t e) {
  const std::int64_t activation = checked_mul(tokens * m.hidden, e);
  const std::int64_t sp = p.sequence_parallel ? p.tp : 1;
  for (int k = 0; k < m.mtp_layers; ++k) {
    ops.push_back(memory_op(op_names::kMtpNorm, OpKind::norm, norm_kernel_name(m), 2 * 2 * activation / sp));
    LayerOp proj;
    proj.name = op_names::kMtpProj;
    proj.kind = OpKind::gemm;
    proj.m = tokens / sp, proj.n = m.hidden, proj.k = 2 * m.hidden;  // replicated: small next to the block
    proj.fwd_flops = 2.0 * static_cast<double>(proj.m) * proj.n * proj.k;
    proj.dgrad_flops = proj.wgrad_flops = proj.fwd_flops;
    proj.weight_bytes = checked_mul(2 * m.hidden * m.hidden, e);
    proj.fwd_bytes = proj.weight_bytes + 3 * activation / sp;
    ops.push_back(proj);
    for (LayerOp op : build_layer_ops(m, m.layers + k, p, mb)) {
      op.name = mtp_name(op.name);
      ops.push_back(std::move(op));
    }
    ops.push_back(memory_op(op_names::kMtpNorm, OpKind::norm, norm_kernel_name(m), 2 * activation / sp));
    add_logits_and_loss(ops, op_names::kMtpLogits, op_names::kMtpLoss, mtp_name(op_names::kHeadLossReduce), m, p,
                        tokens, e);
  }
}

}  // namespace

std::int64_t rank_logits(const ModelSpec& m, const Plan& p, const MicroBatchShape& mb) {
  return checked_mul(checked_mul(mb.micro_batch, mb.seq_len) / p.cp, ceil_div(m.vocab, p.tp));
}

std::vector<LayerOp> build_head_ops(const ModelSpec& m, const Plan& p, const MicroBatchShape& mb) {
  const std::int64_t e = dtype_bytes(mb.dtype, 1);
  const std::int64_t tokens = checked_mul(mb.micro_batch, mb.seq_len) / p.cp;
  const std::int64_t activation = checked_mul(tokens * m.hidden, e);
  const std::int64_t sp = p.sequence_parallel ? p.tp : 1;
  std::vector<LayerOp> ops;
  ops.push_back(memory_op(op_names::kHeadNorm, OpKind::norm, norm_kernel_name(m), 2 * activation / sp));
  // the head's GEMM keeps its 16-bit input (no fp8 / fp4 output layer)
  if (p.tp > 1) ops.push_back(tp_region_entry(op_names::kHeadEnter, p.sequence_parallel, activation, activation));
  add_logits_and_loss(ops, op_names::kHeadLogits, op_names::kHeadLoss, op_names::kHeadLossReduce, m, p, tokens, e);
  add_mtp_modules(ops, m, p, mb, tokens, e);
  return ops;
}

}  // namespace twinsim
