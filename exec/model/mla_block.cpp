#include "exec/model/mla_block.hpp"

#include <cmath>
#include <string>

#include "exec/model/columns.hpp"
#include "exec/model/host_view.hpp"
#include "exec/model/tp_region.hpp"
#include "models/op_names.hpp"

namespace twinsim::exec {

constexpr MemCategory kAct = MemCategory::activations;

std::vector<Tensor*> MlaSaved::tensors() {
  return {&norm.mean, &norm.rstd, &normed, &q_latent_in, &q_rstd, &q_latent, &kv_latent_in, &kv_rstd, &kv_latent,
          &q, &k, &v, &out, &probs, &lse};
}

void MlaSaved::release_all() {
  for (Tensor* t : tensors()) t->release();
}

std::vector<ParamSpec> mla_param_specs(const TransformerConfig& c, int layer) {
  const MlaSpec& a = *c.model.mla;
  const std::string p = "layer" + std::to_string(layer) + ".attn.";
  const std::int64_t h = c.hidden(), heads = c.model.heads;
  const float out_std = c.init_std / std::sqrt(2.0f * static_cast<float>(c.model.layers));  // as attention_block.cpp
  std::vector<ParamSpec> s;
  // the input norm sees this rank's token shard under sequence parallelism, as attention_block.cpp's
  s.push_back({p + "norm.weight", 1, h, Shard::none, Init::ones, 0, c.sequence_parallel, false});
  if (a.q_lora_rank > 0) {
    s.push_back({p + "q_down.weight", a.q_lora_rank, h, Shard::none, Init::normal, c.init_std, false, true});
    s.push_back({p + "q_norm.weight", 1, a.q_lora_rank, Shard::none, Init::ones, 0, false, false});
    s.push_back({p + "q_up.weight", heads * c.model.qk_head_dim(), a.q_lora_rank, Shard::rows, Init::normal,
                 c.init_std, false, true});
  } else {
    s.push_back({p + "q.weight", heads * c.model.qk_head_dim(), h, Shard::rows, Init::normal, c.init_std, false, true});
  }
  s.push_back({p + "kv_down.weight", a.kv_lora_rank + a.qk_rope_head_dim, h, Shard::none, Init::normal, c.init_std,
               false, true});
  s.push_back({p + "kv_norm.weight", 1, a.kv_lora_rank, Shard::none, Init::ones, 0, false, false});
  // per head: its K_nope rows, then its V rows (DeepSeek-V2's kv_b_proj viewed [heads, nope + v])
  s.push_back({p + "kv_up.weight", heads * (a.qk_nope_head_dim + a.v_head_dim), a.kv_lora_rank, Shard::rows,
               Init::normal, c.init_std, false, true});
  s.push_back({p + "proj.weight", h, heads * a.v_head_dim, Shard::cols, Init::normal, out_std, false, true});
  return s;
}

MlaBlock::MlaBlock(const TransformerConfig& c, int layer, ParamBlock& params) : c_(c), layer_(layer), p_(params) {
  const std::string p = "layer" + std::to_string(layer) + ".attn.";
  norm_w_ = p_.index_of(p + "norm.weight");
  if (q_rank() > 0) {
    q_down_ = p_.index_of(p + "q_down.weight");
    q_norm_ = p_.index_of(p + "q_norm.weight");
    q_up_ = p_.index_of(p + "q_up.weight");
  } else {
    q_w_ = p_.index_of(p + "q.weight");
  }
  kv_down_ = p_.index_of(p + "kv_down.weight");
  kv_norm_ = p_.index_of(p + "kv_norm.weight");
  kv_up_ = p_.index_of(p + "kv_up.weight");
  proj_w_ = p_.index_of(p + "proj.weight");
}

void MlaBlock::forward(const ModelContext& ctx, const Tensor& x, Tensor& y, MlaSaved& s, Pass pass) const {
  with_storage(c_.storage, [&]<class T>() { forward_t(ctx, x.as<T>(), y.as<T>(), s, pass); });
}

template <class T>
void MlaBlock::forward_t(const ModelContext& ctx, const T* x, T* y, MlaSaved& s, Pass pass) const {
  const int t = c_.tokens(), h = c_.hidden(), b = c_.micro_batch, seq = c_.seq_len;
  s.normed = Tensor::uninitialized_of<T>(kAct, static_cast<std::size_t>(t) * h);
  {
    auto op = ctx.op(layer_, op_names::kAttnNorm, pass);
    norm_forward(ctx, c_, x, p_.param<T>(norm_w_), nullptr, s.normed.as<T>(), s.norm, t);
  }
  q_forward<T>(ctx, s, pass);
  Tensor k_rope = kv_forward<T>(ctx, s, pass);
  rope_forward(ctx, s, k_rope.as<T>(), pass);
  k_rope.release();
  const kernels::AttentionShape shape{b, seq, heads(), heads(), qk_dim(), v_dim()};
  {
    auto op = ctx.op(layer_, op_names::kAttnCore, pass);
    s.out = Tensor::uninitialized_of<T>(kAct, static_cast<std::size_t>(t) * heads() * v_dim());
    const std::size_t rows = static_cast<std::size_t>(b) * heads() * seq;
    if (c_.flash_attention) {
      s.lse = Tensor::uninitialized(kAct, rows);
      ctx.kernels().flash_attention_forward(s.q.as<T>(), s.k.as<T>(), s.v.as<T>(), s.out.as<T>(), s.lse.data(), shape);
    } else {
      s.probs = Tensor::zeros_of<T>(kAct, rows * seq);
      ctx.kernels().attention_forward(s.q.as<T>(), s.k.as<T>(), s.v.as<T>(), s.out.as<T>(), s.probs.as<T>(), shape);
    }
  }
  Tensor partial = Tensor::uninitialized_of<T>(kAct, static_cast<std::size_t>(t) * h);
  {
    auto op = ctx.op(layer_, op_names::kAttnProj, pass);
    ctx.kernels().linear_forward(s.out.as<T>(), p_.param<T>(proj_w_), nullptr, partial.as<T>(), t, heads() * v_dim(),
                                 h);
  }
  if (ctx.tp_size() > 1) {
    auto op = ctx.op(layer_, op_names::kAttnTpExit, pass);
    all_reduce_tp(ctx, partial.as<T>(), partial.size());
  }
  auto op = ctx.op(layer_, op_names::kAttnResidual, pass);
  ctx.kernels().residual_forward(x, partial.as<T>(), nullptr, y, t, h);
}

// Q: through its low-rank bottleneck and RMSNorm (q_lora_rank > 0), or one W_Q.
template <class T>
void MlaBlock::q_forward(const ModelContext& ctx, MlaSaved& s, Pass pass) const {
  const int t = c_.tokens(), h = c_.hidden(), hq = heads() * qk_dim();
  const T* n = s.normed.as<T>();
  s.q = Tensor::uninitialized_of<T>(kAct, static_cast<std::size_t>(t) * hq);
  if (q_rank() == 0) {
    auto op = ctx.op(layer_, op_names::kAttnQ, pass);
    ctx.kernels().linear_forward(n, p_.param<T>(q_w_), nullptr, s.q.as<T>(), t, h, hq);
    return;
  }
  s.q_latent_in = Tensor::uninitialized_of<T>(kAct, static_cast<std::size_t>(t) * q_rank());
  {
    auto op = ctx.op(layer_, op_names::kAttnQDown, pass);
    ctx.kernels().linear_forward(n, p_.param<T>(q_down_), nullptr, s.q_latent_in.as<T>(), t, h, q_rank());
  }
  s.q_latent = Tensor::uninitialized_of<T>(kAct, s.q_latent_in.size());
  s.q_rstd = Tensor(kAct, static_cast<std::size_t>(t));
  {
    auto op = ctx.op(layer_, op_names::kAttnQNorm, pass);
    ctx.kernels().rmsnorm_forward(s.q_latent_in.as<T>(), p_.param<T>(q_norm_), s.q_latent.as<T>(), s.q_rstd.data(), t,
                                  q_rank(), c_.norm_eps);
  }
  auto op = ctx.op(layer_, op_names::kAttnQUp, pass);
  ctx.kernels().linear_forward(s.q_latent.as<T>(), p_.param<T>(q_up_), nullptr, s.q.as<T>(), t, q_rank(), hq);
}

// K and V: the shared down-projection to [c_KV | k_R], c_KV's RMSNorm, the up-projection to
// each head's K (no-RoPE part) and V. Returns k_R, not yet rotated.
template <class T>
Tensor MlaBlock::kv_forward(const ModelContext& ctx, MlaSaved& s, Pass pass) const {
  const int t = c_.tokens(), h = c_.hidden(), latent = kv_rank() + rope();
  const int hq = heads() * qk_dim(), hkv = heads() * (nope() + v_dim());
  Tensor k_rope = Tensor::uninitialized_of<T>(kAct, static_cast<std::size_t>(t) * rope());
  s.kv_latent_in = Tensor::uninitialized_of<T>(kAct, static_cast<std::size_t>(t) * kv_rank());
  {
    auto op = ctx.op(layer_, op_names::kAttnKvDown, pass);
    Tensor down = Tensor::uninitialized_of<T>(kAct, static_cast<std::size_t>(t) * latent);
    ctx.kernels().linear_forward(s.normed.as<T>(), p_.param<T>(kv_down_), nullptr, down.as<T>(), t, h, latent);
    copy_out(ctx.device(), down.as<T>(), Columns{t, 1, latent, 0, kv_rank()}, s.kv_latent_in.as<T>());
    copy_out(ctx.device(), down.as<T>(), Columns{t, 1, latent, kv_rank(), rope()}, k_rope.as<T>());
  }
  s.kv_latent = Tensor::uninitialized_of<T>(kAct, s.kv_latent_in.size());
  s.kv_rstd = Tensor(kAct, static_cast<std::size_t>(t));
  {
    auto op = ctx.op(layer_, op_names::kAttnKvNorm, pass);
    ctx.kernels().rmsnorm_forward(s.kv_latent_in.as<T>(), p_.param<T>(kv_norm_), s.kv_latent.as<T>(), s.kv_rstd.data(),
                                  t, kv_rank(), c_.norm_eps);
  }
  s.k = Tensor::uninitialized_of<T>(kAct, static_cast<std::size_t>(t) * hq);
  s.v = Tensor::uninitialized_of<T>(kAct, static_cast<std::size_t>(t) * heads() * v_dim());
  auto op = ctx.op(layer_, op_names::kAttnKvUp, pass);
  Tensor kv = Tensor::uninitialized_of<T>(kAct, static_cast<std::size_t>(t) * hkv);
  ctx.kernels().linear_forward(s.kv_latent.as<T>(), p_.param<T>(kv_up_), nullptr, kv.as<T>(), t, kv_rank(), hkv);
  Tensor k_nope = Tensor::uninitialized_of<T>(kAct, static_cast<std::size_t>(t) * heads() * nope());
  copy_out(ctx.device(), kv.as<T>(), Columns{t, heads(), nope() + v_dim(), 0, nope()}, k_nope.as<T>());
  copy_in(ctx.device(), k_nope.as<T>(), Columns{t, heads(), qk_dim(), 0, nope()}, s.k.as<T>());
  copy_out(ctx.device(), kv.as<T>(), Columns{t, heads(), nope() + v_dim(), nope(), v_dim()}, s.v.as<T>());
  return k_rope;
}

// RoPE on each head's rope part of Q and on the shared k_R, which every head's K takes.
template <class T>
void MlaBlock::rope_forward(const ModelContext& ctx, MlaSaved& s, T* k_rope, Pass pass) const {
  const int t = c_.tokens(), b = c_.micro_batch, seq = c_.seq_len;
  auto op = ctx.op(layer_, op_names::kAttnRope, pass);
  const Columns q_rope{t, heads(), qk_dim(), nope(), rope()};
  Tensor rotated = Tensor::uninitialized_of<T>(kAct, static_cast<std::size_t>(t) * heads() * rope());
  copy_out(ctx.device(), s.q.as<T>(), q_rope, rotated.as<T>());
  ctx.kernels().rope_forward(rotated.as<T>(), rotated.as<T>(), b, seq, heads(), rope(), c_.rope_theta);
  copy_in(ctx.device(), rotated.as<T>(), q_rope, s.q.as<T>());
  ctx.kernels().rope_forward(k_rope, k_rope, b, seq, 1, rope(), c_.rope_theta);
  for (int hd = 0; hd < heads(); ++hd)
    copy_in(ctx.device(), k_rope, Columns{t, 1, heads() * qk_dim(), hd * qk_dim() + nope(), rope()}, s.k.as<T>());
}

Tensor MlaBlock::backward(const ModelContext& ctx, const Tensor& dy, const Tensor& x, MlaSaved& s) const {
  return with_storage(c_.storage, [&]<class T>() { return backward_t(ctx, dy.as<T>(), x.as<T>(), s); });
}

template <class T>
Tensor MlaBlock::backward_t(const ModelContext& ctx, const T* dy, const T* x, MlaSaved& s) const {
  const int t = c_.tokens(), h = c_.hidden(), b = c_.micro_batch, seq = c_.seq_len;
  const int ho = heads() * v_dim();
  Tensor dout = Tensor::uninitialized_of<T>(kAct, static_cast<std::size_t>(t) * ho);
  {
    auto op = ctx.op(layer_, op_names::kAttnProj, Pass::bwd_dgrad);
    ctx.kernels().linear_backward_input(dy, p_.param<T>(proj_w_), dout.as<T>(), t, ho, h);
  }
  {
    auto op = ctx.op(layer_, op_names::kAttnProj, Pass::bwd_wgrad);
    ctx.kernels().linear_backward_weight(dy, s.out.as<T>(), p_.grad<T>(proj_w_), t, ho, h, true);
  }
  Tensor dq = Tensor::zeros_of<T>(kAct, s.q.size()), dk = Tensor::zeros_of<T>(kAct, s.k.size()),
         dv = Tensor::zeros_of<T>(kAct, s.v.size());
  {
    auto op = ctx.op(layer_, op_names::kAttnCore, Pass::bwd_dgrad);
    const kernels::AttentionShape shape{b, seq, heads(), heads(), qk_dim(), v_dim()};
    if (c_.flash_attention)
      ctx.kernels().flash_attention_backward(s.q.as<T>(), s.k.as<T>(), s.v.as<T>(), s.out.as<T>(), s.lse.data(),
                                             dout.as<T>(), dq.as<T>(), dk.as<T>(), dv.as<T>(), shape);
    else
      ctx.kernels().attention_backward(s.q.as<T>(), s.k.as<T>(), s.v.as<T>(), s.probs.as<T>(), dout.as<T>(), dq.as<T>(),
                                       dk.as<T>(), dv.as<T>(), shape);
  }
  dout.release();
  for (Tensor* saved : {&s.q, &s.k, &s.v, &s.out, &s.probs, &s.lse}) saved->release();
  Tensor dk_rope = rope_backward(ctx, dq.as<T>(), dk.as<T>());
  Tensor dlatent = kv_up_backward<T>(ctx, s, dk, dv, dk_rope);
  Tensor dq_latent = q_up_backward(ctx, s, dq.as<T>());
  Tensor dn = Tensor::zeros_of<T>(kAct, static_cast<std::size_t>(t) * h);
  if (q_rank() == 0) {  // W_Q is column-parallel: its input grad is partial, like the latents'
    {
      auto op = ctx.op(layer_, op_names::kAttnQ, Pass::bwd_dgrad);
      ctx.kernels().linear_backward_input(dq.as<T>(), p_.param<T>(q_w_), dn.as<T>(), t, h, heads() * qk_dim());
    }
    auto op = ctx.op(layer_, op_names::kAttnQ, Pass::bwd_wgrad);
    ctx.kernels().linear_backward_weight(dq.as<T>(), s.normed.as<T>(), p_.grad<T>(q_w_), t, h, heads() * qk_dim(),
                                         true);
  }
  dq.release();
  if (ctx.tp_size() > 1) {  // the duplicated down-projections need the whole latents' grads
    auto op = ctx.op(layer_, op_names::kAttnTpEnter, Pass::bwd_dgrad);
    all_reduce_tp(ctx, dlatent.as<T>(), dlatent.size());
    if (q_rank() > 0) all_reduce_tp(ctx, dq_latent.as<T>(), dq_latent.size());
    else all_reduce_tp(ctx, dn.as<T>(), dn.size());
  }
  kv_down_backward(ctx, s, dlatent, dn.as<T>());
  if (q_rank() > 0) q_down_backward(ctx, s, dq_latent, dn.as<T>());
  dq_latent.release();
  s.normed.release();
  Tensor dx = Tensor::uninitialized_of<T>(kAct, static_cast<std::size_t>(t) * h);
  {
    auto op = ctx.op(layer_, op_names::kAttnNorm, Pass::bwd_dgrad);
    norm_backward(ctx, c_, dn.as<T>(), x, p_.param<T>(norm_w_), s.norm, dx.as<T>(), p_.grad<T>(norm_w_), nullptr, t);
    ctx.kernels().residual_forward(dx.as<T>(), dy, nullptr, dx.as<T>(), t, h);  // + the residual path's grad
  }
  s.release_all();
  return dx;
}

// RoPE's backward on Q's rope parts (in dq); K's rope parts of every head are one k_R's
// grads: summed over the heads, then rotated back, returned [tokens, rope].
template <class T>
Tensor MlaBlock::rope_backward(const ModelContext& ctx, T* dq, const T* dk) const {
  const int t = c_.tokens(), b = c_.micro_batch, seq = c_.seq_len, hq = heads() * qk_dim();
  Tensor dk_rope(kAct, static_cast<std::size_t>(t) * rope(), c_.storage);
  auto op = ctx.op(layer_, op_names::kAttnRope, Pass::bwd_dgrad);
  const Columns q_rope{t, heads(), qk_dim(), nope(), rope()};
  Tensor rotated = Tensor::uninitialized_of<T>(kAct, static_cast<std::size_t>(t) * heads() * rope());
  copy_out(ctx.device(), dq, q_rope, rotated.as<T>());
  ctx.kernels().rope_backward(rotated.as<T>(), rotated.as<T>(), b, seq, heads(), rope(), c_.rope_theta);
  copy_in(ctx.device(), rotated.as<T>(), q_rope, dq);
  {  // the sum over the heads, on the host (staged where the host cannot read the device)
    HostView<const T> dk_host(ctx.device(), dk, static_cast<std::size_t>(t) * hq);
    HostView<T> d(ctx.device(), dk_rope.as<T>(), dk_rope.size());
    for (int r = 0; r < t; ++r)
      for (int j = 0; j < rope(); ++j) {
        float sum = 0;
        for (int hd = 0; hd < heads(); ++hd)
          sum += kernels::to_float(dk_host.get()[static_cast<std::size_t>(r) * hq + hd * qk_dim() + nope() + j]);
        d.get()[static_cast<std::size_t>(r) * rope() + j] = kernels::from_float<T>(sum);
      }
    d.store();
  }
  ctx.kernels().rope_backward(dk_rope.as<T>(), dk_rope.as<T>(), b, seq, 1, rope(), c_.rope_theta);
  return dk_rope;
}

// W_UKV's backward: dK's no-RoPE part and dV into its output grad, then its input grad with
// dk_R beside it: returns [t, latent] = [d c_KV | d k_R], partial over the TP ranks' heads
// until summed. Frees dk, dv, dk_rope and the saved c_KV.
template <class T>
Tensor MlaBlock::kv_up_backward(const ModelContext& ctx, MlaSaved& s, Tensor& dk, Tensor& dv, Tensor& dk_rope) const {
  const int t = c_.tokens(), latent = kv_rank() + rope(), hkv = heads() * (nope() + v_dim());
  Tensor dlatent = Tensor::uninitialized_of<T>(kAct, static_cast<std::size_t>(t) * latent);
  Tensor dkv = Tensor::uninitialized_of<T>(kAct, static_cast<std::size_t>(t) * hkv);
  {
    auto op = ctx.op(layer_, op_names::kAttnKvUp, Pass::bwd_dgrad);
    Tensor part = Tensor::uninitialized_of<T>(kAct, static_cast<std::size_t>(t) * heads() * nope());
    copy_out(ctx.device(), dk.as<T>(), Columns{t, heads(), qk_dim(), 0, nope()}, part.as<T>());
    copy_in(ctx.device(), part.as<T>(), Columns{t, heads(), nope() + v_dim(), 0, nope()}, dkv.as<T>());
    part.release();
    dk.release();
    copy_in(ctx.device(), dv.as<T>(), Columns{t, heads(), nope() + v_dim(), nope(), v_dim()}, dkv.as<T>());
    dv.release();
    Tensor dc = Tensor::uninitialized_of<T>(kAct, static_cast<std::size_t>(t) * kv_rank());
    ctx.kernels().linear_backward_input(dkv.as<T>(), p_.param<T>(kv_up_), dc.as<T>(), t, kv_rank(), hkv);
    copy_in(ctx.device(), dc.as<T>(), Columns{t, 1, latent, 0, kv_rank()}, dlatent.as<T>());
    copy_in(ctx.device(), dk_rope.as<T>(), Columns{t, 1, latent, kv_rank(), rope()}, dlatent.as<T>());
  }
  {  // each weight gradient is its own op, as the simulator's op list prices it (models/layer_ops.cpp)
    auto op = ctx.op(layer_, op_names::kAttnKvUp, Pass::bwd_wgrad);
    ctx.kernels().linear_backward_weight(dkv.as<T>(), s.kv_latent.as<T>(), p_.grad<T>(kv_up_), t, kv_rank(), hkv, true);
  }
  dkv.release();
  dk_rope.release();
  s.kv_latent.release();
  return dlatent;
}

// W_UQ's backward (q_lora_rank > 0): returns the grad of Q's normed bottleneck, partial over
// the TP ranks' heads; an empty tensor without the bottleneck.
template <class T>
Tensor MlaBlock::q_up_backward(const ModelContext& ctx, MlaSaved& s, const T* dq) const {
  if (q_rank() == 0) return Tensor{};
  const int t = c_.tokens(), hq = heads() * qk_dim();
  Tensor dq_latent;
  {
    auto op = ctx.op(layer_, op_names::kAttnQUp, Pass::bwd_dgrad);
    dq_latent = Tensor::uninitialized_of<T>(kAct, static_cast<std::size_t>(t) * q_rank());
    ctx.kernels().linear_backward_input(dq, p_.param<T>(q_up_), dq_latent.as<T>(), t, q_rank(), hq);
  }
  auto op = ctx.op(layer_, op_names::kAttnQUp, Pass::bwd_wgrad);
  ctx.kernels().linear_backward_weight(dq, s.q_latent.as<T>(), p_.grad<T>(q_up_), t, q_rank(), hq, true);
  s.q_latent.release();
  return dq_latent;
}

// c_KV's RMSNorm backward in place in dlatent, then the shared down-projection's: its input
// grad added into dn, its weight grad. Frees dlatent and the saved c_KV input.
template <class T>
void MlaBlock::kv_down_backward(const ModelContext& ctx, MlaSaved& s, Tensor& dlatent, T* dn) const {
  const int t = c_.tokens(), h = c_.hidden(), latent = kv_rank() + rope();
  {
    auto op = ctx.op(layer_, op_names::kAttnKvNorm, Pass::bwd_dgrad);
    Tensor dc = Tensor::uninitialized_of<T>(kAct, static_cast<std::size_t>(t) * kv_rank());
    Tensor dc_in = Tensor::uninitialized_of<T>(kAct, dc.size());
    copy_out(ctx.device(), dlatent.as<T>(), Columns{t, 1, latent, 0, kv_rank()}, dc.as<T>());
    ctx.kernels().rmsnorm_backward(dc.as<T>(), s.kv_latent_in.as<T>(), p_.param<T>(kv_norm_), s.kv_rstd.data(),
                                   dc_in.as<T>(), p_.grad<T>(kv_norm_), t, kv_rank(), true);
    copy_in(ctx.device(), dc_in.as<T>(), Columns{t, 1, latent, 0, kv_rank()}, dlatent.as<T>());
  }
  s.kv_latent_in.release();
  {
    auto op = ctx.op(layer_, op_names::kAttnKvDown, Pass::bwd_dgrad);
    ctx.kernels().gemm_forward(dlatent.as<T>(), p_.param<T>(kv_down_), dn, t, h, latent, false, false, 1.0f, 1.0f);
  }
  {
    auto op = ctx.op(layer_, op_names::kAttnKvDown, Pass::bwd_wgrad);
    ctx.kernels().linear_backward_weight(dlatent.as<T>(), s.normed.as<T>(), p_.grad<T>(kv_down_), t, h, latent, true);
  }
  dlatent.release();
}

// Q's bottleneck RMSNorm backward, then W_DQ's: its input grad added into dn, its weight grad.
template <class T>
void MlaBlock::q_down_backward(const ModelContext& ctx, MlaSaved& s, Tensor& dq_latent, T* dn) const {
  const int t = c_.tokens(), h = c_.hidden();
  {
    auto op = ctx.op(layer_, op_names::kAttnQNorm, Pass::bwd_dgrad);
    Tensor d_in = Tensor::uninitialized_of<T>(kAct, dq_latent.size());
    ctx.kernels().rmsnorm_backward(dq_latent.as<T>(), s.q_latent_in.as<T>(), p_.param<T>(q_norm_), s.q_rstd.data(),
                                   d_in.as<T>(), p_.grad<T>(q_norm_), t, q_rank(), true);
    dq_latent = std::move(d_in);
  }
  s.q_latent_in.release();
  {
    auto op = ctx.op(layer_, op_names::kAttnQDown, Pass::bwd_dgrad);
    ctx.kernels().gemm_forward(dq_latent.as<T>(), p_.param<T>(q_down_), dn, t, h, q_rank(), false, false, 1.0f, 1.0f);
  }
  auto op = ctx.op(layer_, op_names::kAttnQDown, Pass::bwd_wgrad);
  ctx.kernels().linear_backward_weight(dq_latent.as<T>(), s.normed.as<T>(), p_.grad<T>(q_down_), t, h, q_rank(), true);
}

}  // namespace twinsim::exec
