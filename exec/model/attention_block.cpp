#include "exec/model/attention_block.hpp"

#include <cmath>
#include <string>
#include <tuple>

#include "exec/model/tp_region.hpp"
#include "models/op_names.hpp"

namespace twinsim::exec {

constexpr MemCategory kAct = MemCategory::activations;

std::vector<Tensor*> AttentionSaved::tensors() {
  std::vector<Tensor*> all{&norm.mean, &norm.rstd, &normed, &q,      &k,      &v,     &out,
                           &probs,     &lse,       &lora_q, &lora_k, &lora_v, &lora_o};
  for (Tensor* t : mla.tensors()) all.push_back(t);
  return all;
}

void AttentionSaved::release_all() {
  for (Tensor* t : tensors()) t->release();
}

std::vector<ParamSpec> attention_param_specs(const TransformerConfig& c, int layer) {
  if (c.model.mla) return mla_param_specs(c, layer);
  const std::string p = "layer" + std::to_string(layer) + ".attn.";
  const std::int64_t h = c.hidden(), q = c.model.q_width(), kv = c.model.kv_width();
  const bool sp = c.sequence_parallel;
  // output projections scaled by 1/sqrt(2 layers) (GPT-2, Radford et al. 2019 §2.3;
  // Megatron scaled_init_method_normal)
  const float out_std = c.init_std / std::sqrt(2.0f * static_cast<float>(c.model.layers));
  std::vector<ParamSpec> s;
  s.push_back({p + "norm.weight", 1, h, Shard::none, Init::ones, 0, sp, false});
  if (c.model.bias && !c.rmsnorm()) s.push_back({p + "norm.bias", 1, h, Shard::none, Init::zeros, 0, sp, false});
  s.push_back({p + "q.weight", q, h, Shard::rows, Init::normal, c.init_std, false, true});
  s.push_back({p + "k.weight", kv, h, Shard::rows, Init::normal, c.init_std, false, true});
  s.push_back({p + "v.weight", kv, h, Shard::rows, Init::normal, c.init_std, false, true});
  for (const auto& [module, name, out] :
       {std::tuple{LoraModule::q, "q.", q}, std::tuple{LoraModule::k, "k.", kv}, std::tuple{LoraModule::v, "v.", kv}})
    for (ParamSpec& a : lora_param_specs(c, module, p + name, h, out)) s.push_back(std::move(a));
  if (c.model.bias) {
    s.push_back({p + "q.bias", 1, q, Shard::cols, Init::zeros, 0, false, false});
    s.push_back({p + "k.bias", 1, kv, Shard::cols, Init::zeros, 0, false, false});
    s.push_back({p + "v.bias", 1, kv, Shard::cols, Init::zeros, 0, false, false});
  }
  s.push_back({p + "proj.weight", h, q, Shard::cols, Init::normal, out_std, false, true});
  for (ParamSpec& a : lora_param_specs(c, LoraModule::o, p + "proj.", q, h)) s.push_back(std::move(a));
  if (c.model.bias) s.push_back({p + "proj.bias", 1, h, Shard::none, Init::zeros, 0, sp, false});
  return s;
}

AttentionBlock::AttentionBlock(const TransformerConfig& c, int layer, ParamBlock& params)
    : c_(c), layer_(layer), p_(params) {
  if (c.model.mla) {
    mla_.emplace(c, layer, params);
    return;
  }
  const std::string p = "layer" + std::to_string(layer) + ".attn.";
  norm_w_ = p_.index_of(p + "norm.weight");
  q_w_ = p_.index_of(p + "q.weight");
  k_w_ = p_.index_of(p + "k.weight");
  v_w_ = p_.index_of(p + "v.weight");
  proj_w_ = p_.index_of(p + "proj.weight");
  const int h = c.hidden(), qw = c.local_q_width(), kvw = c.local_kv_width();
  lora_q_ = LoraLinear(c, params, LoraModule::q, p + "q.", h, qw);
  lora_k_ = LoraLinear(c, params, LoraModule::k, p + "k.", h, kvw);
  lora_v_ = LoraLinear(c, params, LoraModule::v, p + "v.", h, kvw);
  lora_o_ = LoraLinear(c, params, LoraModule::o, p + "proj.", qw, h);
  if (c.model.bias) {
    if (!c.rmsnorm()) norm_b_ = p_.index_of(p + "norm.bias");
    q_b_ = p_.index_of(p + "q.bias");
    k_b_ = p_.index_of(p + "k.bias");
    v_b_ = p_.index_of(p + "v.bias");
    proj_b_ = p_.index_of(p + "proj.bias");
  }
}

template <class T>
void AttentionBlock::core_forward(const ModelContext& ctx, const AttentionSaved& s, T* out, T* probs, float* lse) const {
  const kernels::AttentionShape shape{c_.micro_batch, c_.seq_len, c_.local_heads(), c_.local_kv_heads(),
                                      c_.head_dim()};
  if (c_.flash_attention) ctx.kernels().flash_attention_forward(s.q.as<T>(), s.k.as<T>(), s.v.as<T>(), out, lse, shape);
  else ctx.kernels().attention_forward(s.q.as<T>(), s.k.as<T>(), s.v.as<T>(), out, probs, shape);
}

void AttentionBlock::forward(const ModelContext& ctx, const Tensor& x, Tensor& y, AttentionSaved& s,
                             Pass pass) const {
  if (mla_) return mla_->forward(ctx, x, y, s.mla, pass);
  with_storage(c_.storage, [&]<class T>() { forward_t(ctx, x.as<T>(), y.as<T>(), s, pass); });
}

template <class T>
void AttentionBlock::forward_t(const ModelContext& ctx, const T* x, T* y, AttentionSaved& s, Pass pass) const {
  const int tl = c_.local_tokens(), t = c_.tokens(), h = c_.hidden();
  const int qw = c_.local_q_width(), kvw = c_.local_kv_width();
  s.normed = Tensor::uninitialized_of<T>(kAct, static_cast<std::size_t>(tl) * h);
  {
    auto op = ctx.op(layer_, op_names::kAttnNorm, pass);
    norm_forward(ctx, c_, x, p_.param<T>(norm_w_), p_.param<T>(norm_b_), s.normed.as<T>(), s.norm, tl);
  }
  Tensor gathered;
  const T* in = s.normed.as<T>();
  if (c_.sequence_parallel && ctx.tp_size() > 1) {
    auto op = ctx.op(layer_, op_names::kAttnTpEnter, pass);
    in = gather_token_rows_to_buffer(ctx, in, s.normed.size(), gathered);
  }
  s.q = Tensor::uninitialized_of<T>(kAct, static_cast<std::size_t>(t) * qw);
  s.k = Tensor::uninitialized_of<T>(kAct, static_cast<std::size_t>(t) * kvw);
  s.v = Tensor::uninitialized_of<T>(kAct, static_cast<std::size_t>(t) * kvw);
  {
    auto op = ctx.op(layer_, op_names::kAttnQkv, pass);
    ctx.kernels().linear_forward(in, p_.param<T>(q_w_), p_.param<T>(q_b_), s.q.as<T>(), t, h, qw);
    ctx.kernels().linear_forward(in, p_.param<T>(k_w_), p_.param<T>(k_b_), s.k.as<T>(), t, h, kvw);
    ctx.kernels().linear_forward(in, p_.param<T>(v_w_), p_.param<T>(v_b_), s.v.as<T>(), t, h, kvw);
    if (lora_q_.active()) lora_q_.forward(ctx, in, s.q.as<T>(), t, s.lora_q);
    if (lora_k_.active()) lora_k_.forward(ctx, in, s.k.as<T>(), t, s.lora_k);
    if (lora_v_.active()) lora_v_.forward(ctx, in, s.v.as<T>(), t, s.lora_v);
  }
  gathered.release();
  if (c_.model.position == Position::rope) {
    auto op = ctx.op(layer_, op_names::kAttnRope, pass);
    ctx.kernels().rope_forward(s.q.as<T>(), s.q.as<T>(), c_.micro_batch, c_.seq_len, c_.local_heads(), c_.head_dim(),
                    c_.rope_theta);
    ctx.kernels().rope_forward(s.k.as<T>(), s.k.as<T>(), c_.micro_batch, c_.seq_len, c_.local_kv_heads(), c_.head_dim(),
                    c_.rope_theta);
  }
  {
    auto op = ctx.op(layer_, op_names::kAttnCore, pass);
    s.out = Tensor::uninitialized_of<T>(kAct, static_cast<std::size_t>(t) * qw);
    const std::size_t rows = static_cast<std::size_t>(c_.micro_batch) * c_.local_heads() * c_.seq_len;
    if (c_.flash_attention) s.lse = Tensor::uninitialized(kAct, rows);
    else s.probs = Tensor::zeros_of<T>(kAct, rows * c_.seq_len);
    core_forward(ctx, s, s.out.as<T>(), s.probs.as<T>(), s.lse.as<float>());
  }
  Tensor partial = Tensor::uninitialized_of<T>(kAct, static_cast<std::size_t>(t) * h);
  {
    auto op = ctx.op(layer_, op_names::kAttnProj, pass);
    ctx.kernels().linear_forward(s.out.as<T>(), p_.param<T>(proj_w_), nullptr, partial.as<T>(), t, qw, h);
    if (lora_o_.active()) lora_o_.forward(ctx, s.out.as<T>(), partial.as<T>(), t, s.lora_o);
  }
  Tensor reduced;
  const T* branch = partial.as<T>();
  if (ctx.tp_size() > 1) {
    auto op = ctx.op(layer_, op_names::kAttnTpExit, pass);
    if (c_.sequence_parallel) {
      reduced = reduce_scatter_token_rows(ctx, partial.as<T>(), partial.size(), kAct);
      branch = reduced.as<T>();
    } else {
      all_reduce_tp(ctx, partial.as<T>(), partial.size());
    }
  }
  {
    auto op = ctx.op(layer_, op_names::kAttnResidual, pass);
    ctx.kernels().residual_forward(x, branch, p_.param<T>(proj_b_), y, tl, h);
  }
}

void AttentionBlock::drop_core_activations(AttentionSaved& s) const {
  s.probs.release();
  s.lse.release();
}

Tensor AttentionBlock::backward(const ModelContext& ctx, const Tensor& dy, const Tensor& x, AttentionSaved& s) const {
  if (mla_) return mla_->backward(ctx, dy, x, s.mla);
  return with_storage(c_.storage, [&]<class T>() { return backward_t(ctx, dy.as<T>(), x.as<T>(), s); });
}

template <class T>
void AttentionBlock::qkv_weight_backward(const ModelContext& ctx, const T* dq, const T* dk, const T* dv, const T* in,
                                         AttentionSaved& s, T* dn) const {
  const int t = c_.tokens(), h = c_.hidden(), qw = c_.local_q_width(), kvw = c_.local_kv_width();
  {  // the adapters' grads, and their share of the input's grad
    auto op = ctx.op(layer_, op_names::kAttnQkv, Pass::bwd_dgrad);
    if (lora_q_.active()) lora_q_.backward(ctx, dq, in, s.lora_q, dn, t);
    if (lora_k_.active()) lora_k_.backward(ctx, dk, in, s.lora_k, dn, t);
    if (lora_v_.active()) lora_v_.backward(ctx, dv, in, s.lora_v, dn, t);
  }
  if (!base_trains(c_)) return;  // LoRA: the frozen matrices take no weight gradient
  auto op = ctx.op(layer_, op_names::kAttnQkv, Pass::bwd_wgrad);
  ctx.kernels().linear_backward_weight(dq, in, p_.grad<T>(q_w_), t, h, qw, true);
  ctx.kernels().linear_backward_weight(dk, in, p_.grad<T>(k_w_), t, h, kvw, true);
  ctx.kernels().linear_backward_weight(dv, in, p_.grad<T>(v_w_), t, h, kvw, true);
  if (q_b_ < 0) return;
  ctx.kernels().linear_backward_bias(dq, p_.grad<T>(q_b_), t, qw, true);
  ctx.kernels().linear_backward_bias(dk, p_.grad<T>(k_b_), t, kvw, true);
  ctx.kernels().linear_backward_bias(dv, p_.grad<T>(v_b_), t, kvw, true);
}

// The core's backward (its output replayed first when selective recompute dropped the
// softmax statistics) and RoPE's: dq, dk, dv. Frees dout and the core's saved tensors.
template <class T>
void AttentionBlock::core_backward(const ModelContext& ctx, AttentionSaved& s, Tensor& dout, Tensor& dq, Tensor& dk,
                                   Tensor& dv) const {
  Tensor replay;  // selective recompute: the core's output computed again (Megatron's checkpoint does too)
  if (s.probs.empty() && s.lse.empty()) {
    auto op = ctx.op(layer_, op_names::kAttnCore, Pass::recompute);
    const std::size_t rows = static_cast<std::size_t>(c_.micro_batch) * c_.local_heads() * c_.seq_len;
    replay = Tensor::uninitialized_of<T>(kAct, s.out.size());
    if (c_.flash_attention) s.lse = Tensor::uninitialized(kAct, rows);
    else s.probs = Tensor::zeros_of<T>(kAct, rows * c_.seq_len);
    core_forward(ctx, s, replay.as<T>(), s.probs.as<T>(), s.lse.as<float>());
  }
  dq = Tensor::zeros_of<T>(kAct, s.q.size());
  dk = Tensor::zeros_of<T>(kAct, s.k.size());
  dv = Tensor::zeros_of<T>(kAct, s.v.size());
  {
    auto op = ctx.op(layer_, op_names::kAttnCore, Pass::bwd_dgrad);
    const kernels::AttentionShape shape{c_.micro_batch, c_.seq_len, c_.local_heads(), c_.local_kv_heads(),
                                        c_.head_dim()};
    if (c_.flash_attention)
      ctx.kernels().flash_attention_backward(s.q.as<T>(), s.k.as<T>(), s.v.as<T>(), s.out.as<T>(), s.lse.as<float>(),
                                             dout.as<T>(),
                                  dq.as<T>(), dk.as<T>(), dv.as<T>(), shape);
    else
      ctx.kernels().attention_backward(s.q.as<T>(), s.k.as<T>(), s.v.as<T>(), s.probs.as<T>(), dout.as<T>(), dq.as<T>(),
                            dk.as<T>(), dv.as<T>(), shape);
  }
  dout.release();
  replay.release();
  // the core's backward has run: q, k, v, its output and the softmax statistics go
  s.q.release();
  s.k.release();
  s.v.release();
  s.out.release();
  s.probs.release();
  s.lse.release();
  if (c_.model.position == Position::rope) {
    auto op = ctx.op(layer_, op_names::kAttnRope, Pass::bwd_dgrad);
    ctx.kernels().rope_backward(dq.as<T>(), dq.as<T>(), c_.micro_batch, c_.seq_len, c_.local_heads(), c_.head_dim(),
                     c_.rope_theta);
    ctx.kernels().rope_backward(dk.as<T>(), dk.as<T>(), c_.micro_batch, c_.seq_len, c_.local_kv_heads(), c_.head_dim(),
                     c_.rope_theta);
  }
}

template <class T>
Tensor AttentionBlock::backward_t(const ModelContext& ctx, const T* dy, const T* x, AttentionSaved& s) const {
  const int tl = c_.local_tokens(), t = c_.tokens(), h = c_.hidden();
  const int qw = c_.local_q_width(), kvw = c_.local_kv_width();
  const bool sp = c_.sequence_parallel && ctx.tp_size() > 1;
  if (proj_b_ >= 0 && base_trains(c_)) {  // LoRA: the frozen bias has no grad
    auto op = ctx.op(layer_, op_names::kAttnResidual, Pass::bwd_dgrad);
    ctx.kernels().residual_backward(dy, p_.grad<T>(proj_b_), tl, h, true);
  }
  Tensor dy_full;
  const T* dbranch = dy;
  if (sp) {  // g-bar backward: all-gather the grad rows
    auto op = ctx.op(layer_, op_names::kAttnTpExit, Pass::bwd_dgrad);
    dy_full = gather_token_rows(ctx, dy, static_cast<std::size_t>(tl) * h, kAct);
    dbranch = dy_full.as<T>();
  }
  Tensor dout = Tensor::uninitialized_of<T>(kAct, static_cast<std::size_t>(t) * qw);
  {
    auto op = ctx.op(layer_, op_names::kAttnProj, Pass::bwd_dgrad);
    ctx.kernels().linear_backward_input(dbranch, p_.param<T>(proj_w_), dout.as<T>(), t, qw, h);
    if (lora_o_.active()) lora_o_.backward(ctx, dbranch, s.out.as<T>(), s.lora_o, dout.as<T>(), t);
  }
  if (base_trains(c_)) {
    auto op = ctx.op(layer_, op_names::kAttnProj, Pass::bwd_wgrad);
    ctx.kernels().linear_backward_weight(dbranch, s.out.as<T>(), p_.grad<T>(proj_w_), t, qw, h, true);
  }
  dy_full.release();
  Tensor dq, dk, dv;
  core_backward<T>(ctx, s, dout, dq, dk, dv);
  Tensor dn_full = Tensor::uninitialized_of<T>(kAct, static_cast<std::size_t>(t) * h);
  {
    auto op = ctx.op(layer_, op_names::kAttnQkv, Pass::bwd_dgrad);
    ctx.kernels().linear_backward_input(dq.as<T>(), p_.param<T>(q_w_), dn_full.as<T>(), t, h, qw);
    // dn += dk Wk + dv Wv: one GEMM each with beta = 1
    ctx.kernels().gemm_forward(dk.as<T>(), p_.param<T>(k_w_), dn_full.as<T>(), t, h, kvw, false, false, 1.0f, 1.0f);
    ctx.kernels().gemm_forward(dv.as<T>(), p_.param<T>(v_w_), dn_full.as<T>(), t, h, kvw, false, false, 1.0f, 1.0f);
  }
  Tensor gathered;
  const T* in = s.normed.as<T>();
  if (sp) {  // the QKV input was kept sharded; gather it again for the weight grads (§4.2.2)
    auto op = ctx.op(layer_, op_names::kAttnTpEnter, Pass::bwd_dgrad);
    in = gather_token_rows_to_buffer(ctx, in, s.normed.size(), gathered);
  }
  qkv_weight_backward(ctx, dq.as<T>(), dk.as<T>(), dv.as<T>(), in, s, dn_full.as<T>());
  gathered.release();
  dq.release();
  dk.release();
  dv.release();
  s.normed.release();
  Tensor dn_local;
  const T* dn = dn_full.as<T>();
  if (ctx.tp_size() > 1) {  // f backward: all-reduce, or with SP g backward: reduce-scatter
    auto op = ctx.op(layer_, op_names::kAttnTpEnter, Pass::bwd_dgrad);
    dn = tp_entry_backward<T>(ctx, sp, dn_full, dn_local);
  }
  Tensor dx = Tensor::uninitialized_of<T>(kAct, static_cast<std::size_t>(tl) * h);
  {
    auto op = ctx.op(layer_, op_names::kAttnNorm, Pass::bwd_dgrad);
    norm_backward(ctx, c_, dn, x, p_.param<T>(norm_w_), s.norm, dx.as<T>(), p_.grad<T>(norm_w_), p_.grad<T>(norm_b_),
                  tl);
    ctx.kernels().residual_forward(dx.as<T>(), dy, nullptr, dx.as<T>(), tl, h);  // + the residual path's grad
  }
  s.release_all();
  return dx;
}

}  // namespace twinsim::exec
