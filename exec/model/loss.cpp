#include "exec/model/loss.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "exec/model/host_view.hpp"
#include "exec/model/tp_region.hpp"
#include "models/op_names.hpp"

namespace twinsim::exec {


void HeadSaved::release_all() {
  input.release();
  norm.mean.release();
  norm.rstd.release();
  normed.release();
  logits.release();
  lse.release();
}

std::vector<ParamSpec> final_norm_specs(const TransformerConfig& c) {
  const bool sp = c.sequence_parallel;
  std::vector<ParamSpec> s{{"head.norm.weight", 1, c.hidden(), Shard::none, Init::ones, 0, sp, false}};
  if (c.model.bias && !c.rmsnorm()) s.push_back({"head.norm.bias", 1, c.hidden(), Shard::none, Init::zeros, 0, sp, false});
  return s;
}

std::vector<ParamSpec> output_layer_specs(const TransformerConfig& c) {
  const std::string name = c.model.tied_embeddings ? "embedding.word.weight" : "head.output.weight";
  return {{name, c.model.vocab, c.hidden(), Shard::rows, Init::normal, c.init_std, false, true}};
}

float vocab_parallel_cross_entropy(const ModelContext& ctx, const float* logits, const int* targets, float* lse,
                                   int tokens, int local_vocab, int vocab_start) {
  std::vector<float> row_max(tokens), sum_exp(tokens), target_logit(tokens, 0.0f);
  for (int t = 0; t < tokens; ++t) {
    const float* row = logits + static_cast<std::size_t>(t) * local_vocab;
    row_max[t] = *std::max_element(row, row + local_vocab);
  }
  if (ctx.tp_size() > 1) ctx.tp->all_reduce(row_max.data(), tokens, ReduceOp::max);
  for (int t = 0; t < tokens; ++t) {
    const float* row = logits + static_cast<std::size_t>(t) * local_vocab;
    double s = 0;
    for (int j = 0; j < local_vocab; ++j) s += std::exp(static_cast<double>(row[j] - row_max[t]));
    sum_exp[t] = static_cast<float>(s);
    const int j = targets[t] - vocab_start;
    if (j >= 0 && j < local_vocab) target_logit[t] = row[j];
  }
  if (ctx.tp_size() > 1) {
    ctx.tp->all_reduce(sum_exp.data(), tokens);
    ctx.tp->all_reduce(target_logit.data(), tokens);
  }
  double loss = 0;
  for (int t = 0; t < tokens; ++t) {
    // log sum_j exp(l_j) = max + log sum_j exp(l_j - max): the stable logsumexp
    lse[t] = row_max[t] + std::log(sum_exp[t]);
    loss += lse[t] - target_logit[t];
  }
  return static_cast<float>(loss / tokens);
}

void vocab_parallel_cross_entropy_backward(const float* logits, const int* targets, const float* lse, float dloss,
                                           float* dlogits, int tokens, int local_vocab, int vocab_start) {
  const float scale = dloss / static_cast<float>(tokens);
  for (int t = 0; t < tokens; ++t) {
    const float* row = logits + static_cast<std::size_t>(t) * local_vocab;
    float* drow = dlogits + static_cast<std::size_t>(t) * local_vocab;
    for (int j = 0; j < local_vocab; ++j) drow[j] = std::exp(row[j] - lse[t]) * scale;
    const int j = targets[t] - vocab_start;
    if (j >= 0 && j < local_vocab) drow[j] -= scale;
  }
}

Head::Head(const TransformerConfig& c, ParamBlock& norm, ParamBlock& output, int output_slot)
    : c_(c), norm_(norm), out_(output), out_slot_(output_slot) {}

float Head::forward(const ModelContext& ctx, const int* targets, HeadSaved& s, Pass pass) const {
  return with_storage(c_.storage, [&]<class T>() { return forward_t<T>(ctx, targets, s, pass); });
}

Tensor Head::backward(const ModelContext& ctx, const int* targets, float dloss, HeadSaved& s) const {
  return with_storage(c_.storage, [&]<class T>() { return backward_t<T>(ctx, targets, dloss, s); });
}

// The logits and their grads are fp32 whatever the storage type (Megatron upcasts them
// for the cross-entropy), so the output layer is a GEMM with a T input, a T weight and
// an fp32 output (the same product as linear_forward without a bias).
template <class T>
float Head::forward_t(const ModelContext& ctx, const int* targets, HeadSaved& s, Pass pass) const {
  const int tl = c_.local_tokens(), t = c_.tokens(), h = c_.hidden(), vl = c_.local_vocab();
  const T* beta = norm_.slots().size() > 1 ? norm_.param<T>(1) : nullptr;
  s.normed = Tensor::uninitialized_of<T>(MemCategory::activations, static_cast<std::size_t>(tl) * h);
  {
    auto op = ctx.op(-1, op_names::kHeadNorm, pass);
    norm_forward(ctx, c_, s.input.as<T>(), norm_.param<T>(0), beta, s.normed.as<T>(), s.norm, tl);
  }
  Tensor gathered;
  const T* in = s.normed.as<T>();
  if (c_.sequence_parallel && ctx.tp_size() > 1) {
    auto op = ctx.op(-1, op_names::kHeadEnter, pass);
    in = gather_token_rows_to_buffer(ctx, in, s.normed.size(), gathered);
  }
  s.logits = Tensor::uninitialized(MemCategory::activations, static_cast<std::size_t>(t) * vl);
  {
    auto op = ctx.op(-1, op_names::kHeadLogits, pass);
    ctx.kernels().gemm_forward(in, out_.param<T>(out_slot_), s.logits.data(), t, vl, h, false, true);
  }
  auto op = ctx.op(-1, op_names::kHeadLoss, pass);
  s.lse = Tensor(MemCategory::activations, t);
  HostView<float> logits(ctx.device(), s.logits.data(), s.logits.size()), lse(ctx.device(), s.lse.data(), s.lse.size());
  const float loss = vocab_parallel_cross_entropy(ctx, logits.get(), targets, lse.get(), t, vl, c_.vocab_start());
  lse.store();
  return loss;
}

template <class T>
Tensor Head::backward_t(const ModelContext& ctx, const int* targets, float dloss, HeadSaved& s) const {
  const int tl = c_.local_tokens(), t = c_.tokens(), h = c_.hidden(), vl = c_.local_vocab();
  const bool sp = c_.sequence_parallel && ctx.tp_size() > 1;
  {
    // in place, as Megatron's _VocabParallelCrossEntropy.backward: the logits become their grads
    auto op = ctx.op(-1, op_names::kHeadLoss, Pass::bwd_dgrad);
    HostView<float> logits(ctx.device(), s.logits.data(), s.logits.size()), lse(ctx.device(), s.lse.data(), s.lse.size());
    vocab_parallel_cross_entropy_backward(logits.get(), targets, lse.get(), dloss, logits.get(), t, vl,
                                          c_.vocab_start());
    logits.store();
  }
  s.lse.release();
  Tensor dn_full = Tensor::uninitialized_of<T>(MemCategory::activations, static_cast<std::size_t>(t) * h);
  {
    auto op = ctx.op(-1, op_names::kHeadLogits, Pass::bwd_dgrad);
    ctx.kernels().gemm_forward(s.logits.data(), out_.param<T>(out_slot_), dn_full.as<T>(), t, h, vl, false, false);
  }
  Tensor gathered;
  const T* in = s.normed.as<T>();
  if (sp) {
    auto op = ctx.op(-1, op_names::kHeadEnter, Pass::bwd_dgrad);
    in = gather_token_rows_to_buffer(ctx, in, s.normed.size(), gathered);
  }
  {
    auto op = ctx.op(-1, op_names::kHeadLogits, Pass::bwd_wgrad);
    ctx.kernels().gemm_forward(s.logits.data(), in, out_.grad<T>(out_slot_), vl, h, t, true, false, 1.0f, 1.0f);
  }
  gathered.release();
  s.logits.release();  // the output layer has run its backward: its saved tensors go
  s.normed.release();
  Tensor dn_local;
  const T* dn = dn_full.as<T>();
  if (ctx.tp_size() > 1) {
    auto op = ctx.op(-1, op_names::kHeadEnter, Pass::bwd_dgrad);
    if (sp) {
      dn_local = reduce_scatter_token_rows(ctx, dn_full.as<T>(), dn_full.size(), MemCategory::activations);
      dn_full.release();
      dn = dn_local.as<T>();
    } else {
      all_reduce_tp(ctx, dn_full.as<T>(), dn_full.size());
    }
  }
  Tensor dx = Tensor::uninitialized_of<T>(MemCategory::activations, static_cast<std::size_t>(tl) * h);
  auto op = ctx.op(-1, op_names::kHeadNorm, Pass::bwd_dgrad);
  T* dbeta = norm_.slots().size() > 1 ? norm_.grad<T>(1) : nullptr;
  norm_backward(ctx, c_, dn, s.input.as<T>(), norm_.param<T>(0), s.norm, dx.as<T>(), norm_.grad<T>(0), dbeta, tl);
  s.release_all();
  return dx;
}

}  // namespace twinsim::exec
