#include "exec/model/loss.hpp"

#include <vector>

#include "exec/model/device_tokens.hpp"
#include "exec/model/lora_linear.hpp"
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

float vocab_parallel_cross_entropy(const ModelContext& ctx, Pass pass, const float* logits, const int* targets,
                                   float* lse, int tokens, int local_vocab, int vocab_start) {
  const KernelTable& k = ctx.kernels();
  const bool tp = ctx.tp_size() > 1;
  Tensor row_max = Tensor::uninitialized(MemCategory::activations, static_cast<std::size_t>(tokens));
  Tensor sums = Tensor::uninitialized(MemCategory::activations, 2 * static_cast<std::size_t>(tokens));
  {
    auto op = ctx.op(-1, op_names::kHeadLoss, pass);
    k.vocab_parallel_row_max(logits, row_max.data(), tokens, local_vocab);
  }
  if (tp) {
    auto op = ctx.op(-1, op_names::kHeadLossReduce, pass);
    ctx.tp->all_reduce(row_max.data(), tokens, ReduceOp::max);
  }
  {
    auto op = ctx.op(-1, op_names::kHeadLoss, pass);
    k.vocab_parallel_row_sums(logits, targets, row_max.data(), sums.data(), tokens, local_vocab, vocab_start);
  }
  if (tp) {
    auto op = ctx.op(-1, op_names::kHeadLossReduce, pass);
    ctx.tp->all_reduce(sums.data(), sums.size());  // sum_exp and the target logit at once
  }
  auto op = ctx.op(-1, op_names::kHeadLoss, pass);
  Tensor token_loss = Tensor::uninitialized(MemCategory::activations, static_cast<std::size_t>(tokens));
  k.vocab_parallel_loss(row_max.data(), sums.data(), lse, token_loss.data(), tokens);
  // the step's loss on the host, as Megatron's .item(): tokens floats, summed in a fixed order
  std::vector<float> host_loss(static_cast<std::size_t>(tokens));
  ctx.device().copy_to_host(host_loss.data(), token_loss.data(), host_loss.size() * sizeof(float));
  double loss = 0;
  for (float l : host_loss) loss += l;
  return static_cast<float>(loss / tokens);
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
  s.lse = Tensor(MemCategory::activations, t);
  const DeviceTokens device_targets(ctx.device(), targets, t);
  return vocab_parallel_cross_entropy(ctx, pass, s.logits.data(), device_targets.get(), s.lse.data(), t, vl,
                                      c_.vocab_start());
}

template <class T>
Tensor Head::backward_t(const ModelContext& ctx, const int* targets, float dloss, HeadSaved& s) const {
  const int tl = c_.local_tokens(), t = c_.tokens(), h = c_.hidden(), vl = c_.local_vocab();
  const bool sp = c_.sequence_parallel && ctx.tp_size() > 1;
  {
    // in place, as Megatron's _VocabParallelCrossEntropy.backward: the logits become their grads
    auto op = ctx.op(-1, op_names::kHeadLoss, Pass::bwd_dgrad);
    const DeviceTokens device_targets(ctx.device(), targets, t);
    ctx.kernels().vocab_parallel_loss_backward(s.logits.data(), device_targets.get(), s.lse.data(), dloss,
                                               s.logits.data(), t, vl, c_.vocab_start());
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
  if (base_trains(c_)) {  // LoRA: the output layer is frozen
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
