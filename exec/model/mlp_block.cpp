#include "exec/model/mlp_block.hpp"

#include <cmath>
#include <string>

#include "exec/model/tp_region.hpp"
#include "kernels/cpu/activation.hpp"
#include "kernels/cpu/gemm.hpp"
#include "kernels/cpu/linear.hpp"
#include "kernels/cpu/residual.hpp"

namespace twinsim::exec {

namespace k = twinsim::kernels::cpu;
constexpr MemCategory kAct = MemCategory::activations;

void MlpSaved::release_all() {
  norm.mean.release();
  norm.rstd.release();
  normed.release();
  up1.release();
  up2.release();
  act.release();
}

std::vector<ParamSpec> mlp_param_specs(const TransformerConfig& c, int layer) {
  const std::string p = "layer" + std::to_string(layer) + ".mlp.";
  const std::int64_t h = c.hidden(), f = c.model.ffn_hidden;
  const bool sp = c.sequence_parallel;
  // output projection scaled by 1/sqrt(2 layers) (GPT-2 §2.3; Megatron scaled_init_method_normal)
  const float out_std = c.init_std / std::sqrt(2.0f * static_cast<float>(c.model.layers));
  std::vector<ParamSpec> s;
  s.push_back({p + "norm.weight", 1, h, Shard::none, Init::ones, 0, sp, false});
  if (c.model.bias && !c.rmsnorm()) s.push_back({p + "norm.bias", 1, h, Shard::none, Init::zeros, 0, sp, false});
  if (c.swiglu()) {
    s.push_back({p + "gate.weight", f, h, Shard::rows, Init::normal, c.init_std, false, true});
    s.push_back({p + "up.weight", f, h, Shard::rows, Init::normal, c.init_std, false, true});
    s.push_back({p + "down.weight", h, f, Shard::cols, Init::normal, out_std, false, true});
  } else {
    s.push_back({p + "fc1.weight", f, h, Shard::rows, Init::normal, c.init_std, false, true});
    s.push_back({p + "fc2.weight", h, f, Shard::cols, Init::normal, out_std, false, true});
  }
  if (c.model.bias) {
    s.push_back({p + (c.swiglu() ? "gate.bias" : "fc1.bias"), 1, f, Shard::cols, Init::zeros, 0, false, false});
    if (c.swiglu()) s.push_back({p + "up.bias", 1, f, Shard::cols, Init::zeros, 0, false, false});
    s.push_back({p + (c.swiglu() ? "down.bias" : "fc2.bias"), 1, h, Shard::none, Init::zeros, 0, sp, false});
  }
  return s;
}

MlpBlock::MlpBlock(const TransformerConfig& c, int layer, ParamBlock& params)
    : c_(c), layer_(layer), p_(params) {
  const std::string p = "layer" + std::to_string(layer) + ".mlp.";
  const std::string up = c.swiglu() ? "gate" : "fc1", down = c.swiglu() ? "down" : "fc2";
  up_name_ = c.swiglu() ? "mlp.gate_up" : "mlp.fc1";
  down_name_ = c.swiglu() ? "mlp.down" : "mlp.fc2";
  norm_w_ = p_.index_of(p + "norm.weight");
  w1_ = p_.index_of(p + up + ".weight");
  w2_ = p_.index_of(p + down + ".weight");
  if (c.swiglu()) w3_ = p_.index_of(p + "up.weight");
  if (c.model.bias) {
    if (!c.rmsnorm()) norm_b_ = p_.index_of(p + "norm.bias");
    w1b_ = p_.index_of(p + up + ".bias");
    w2b_ = p_.index_of(p + down + ".bias");
    if (c.swiglu()) w3b_ = p_.index_of(p + "up.bias");
  }
}

void MlpBlock::forward(const ModelContext& ctx, const float* x, float* y, MlpSaved& s, Pass pass) const {
  const int tl = c_.local_tokens(), t = c_.tokens(), h = c_.hidden(), f = c_.local_ffn();
  const std::size_t inner = static_cast<std::size_t>(t) * f;
  s.normed = Tensor::uninitialized(kAct, static_cast<std::size_t>(tl) * h);
  {
    auto op = ctx.op(layer_, "mlp.norm", pass);
    norm_forward(c_, x, param(norm_w_), param(norm_b_), s.normed.data(), s.norm, tl);
  }
  Tensor gathered;
  const float* in = s.normed.data();
  if (c_.sequence_parallel && ctx.tp_size() > 1) {
    auto op = ctx.op(layer_, "mlp.tp_enter", pass);
    in = gather_token_rows_to_buffer(ctx, in, s.normed.size(), gathered);
  }
  s.up1 = Tensor::uninitialized(kAct, inner);
  {
    auto op = ctx.op(layer_, up_name_, pass);
    k::linear_forward(in, param(w1_), param(w1b_), s.up1.data(), t, h, f);
    if (c_.swiglu()) {
      s.up2 = Tensor::uninitialized(kAct, inner);
      k::linear_forward(in, param(w3_), param(w3b_), s.up2.data(), t, h, f);
    }
  }
  gathered.release();
  s.act = Tensor::uninitialized(kAct, inner);
  {
    auto op = ctx.op(layer_, "mlp.act", pass);
    if (c_.swiglu()) k::swiglu_forward(s.up1.data(), s.up2.data(), s.act.data(), static_cast<long>(inner));
    else k::gelu_forward(s.up1.data(), s.act.data(), static_cast<long>(inner));
  }
  if (!s.for_backward) {
    s.up1.release();
    s.up2.release();
  }
  Tensor partial = Tensor::uninitialized(kAct, static_cast<std::size_t>(t) * h);
  {
    auto op = ctx.op(layer_, down_name_, pass);
    k::linear_forward(s.act.data(), param(w2_), nullptr, partial.data(), t, f, h);
  }
  if (!s.for_backward) s.act.release();
  Tensor reduced;
  const float* branch = partial.data();
  if (ctx.tp_size() > 1) {
    auto op = ctx.op(layer_, "mlp.tp_exit", pass);
    if (c_.sequence_parallel) {
      reduced = reduce_scatter_token_rows(ctx, partial.data(), partial.size(), kAct);
      branch = reduced.data();
    } else {
      all_reduce_tp(ctx, partial.data(), partial.size());
    }
  }
  {
    auto op = ctx.op(layer_, "mlp.residual", pass);
    k::residual_forward(x, branch, param(w2b_), y, tl, h);
  }
}

Tensor MlpBlock::backward(const ModelContext& ctx, const float* dy, const float* x, MlpSaved& s) const {
  const int tl = c_.local_tokens(), t = c_.tokens(), h = c_.hidden(), f = c_.local_ffn();
  const std::size_t inner = static_cast<std::size_t>(t) * f;
  const bool sp = c_.sequence_parallel && ctx.tp_size() > 1;
  if (w2b_ >= 0) {
    auto op = ctx.op(layer_, "mlp.residual", Pass::bwd_dgrad);
    k::residual_backward(dy, grad(w2b_), tl, h, true);
  }
  Tensor dy_full;
  const float* dbranch = dy;
  if (sp) {
    auto op = ctx.op(layer_, "mlp.tp_exit", Pass::bwd_dgrad);
    dy_full = gather_token_rows(ctx, dy, static_cast<std::size_t>(tl) * h, kAct);
    dbranch = dy_full.data();
  }
  Tensor dact = Tensor::uninitialized(kAct, inner);
  {
    auto op = ctx.op(layer_, down_name_, Pass::bwd_dgrad);
    k::linear_backward_input(dbranch, param(w2_), dact.data(), t, f, h);
  }
  {
    auto op = ctx.op(layer_, down_name_, Pass::bwd_wgrad);
    k::linear_backward_weight(dbranch, s.act.data(), grad(w2_), t, f, h, true);
  }
  dy_full.release();
  s.act.release();
  Tensor d1 = Tensor::uninitialized(kAct, inner), d3;
  {
    auto op = ctx.op(layer_, "mlp.act", Pass::bwd_dgrad);
    if (c_.swiglu()) {
      d3 = Tensor::uninitialized(kAct, inner);
      k::swiglu_backward(dact.data(), s.up1.data(), s.up2.data(), d1.data(), d3.data(), static_cast<long>(inner));
    } else {
      k::gelu_backward(dact.data(), s.up1.data(), d1.data(), static_cast<long>(inner));
    }
  }
  dact.release();
  s.up1.release();
  s.up2.release();
  Tensor dn_full = Tensor::uninitialized(kAct, static_cast<std::size_t>(t) * h);
  {
    auto op = ctx.op(layer_, up_name_, Pass::bwd_dgrad);
    k::linear_backward_input(d1.data(), param(w1_), dn_full.data(), t, h, f);
    if (c_.swiglu()) k::gemm_forward(d3.data(), param(w3_), dn_full.data(), t, h, f, false, false, 1.0f, 1.0f);
  }
  Tensor gathered;
  const float* in = s.normed.data();
  if (sp) {  // fc1's input was kept sharded; gather it again for the weight grad (§4.2.2)
    auto op = ctx.op(layer_, "mlp.tp_enter", Pass::bwd_dgrad);
    in = gather_token_rows_to_buffer(ctx, in, s.normed.size(), gathered);
  }
  {
    auto op = ctx.op(layer_, up_name_, Pass::bwd_wgrad);
    k::linear_backward_weight(d1.data(), in, grad(w1_), t, h, f, true);
    if (w1b_ >= 0) k::linear_backward_bias(d1.data(), grad(w1b_), t, f, true);
    if (c_.swiglu()) {
      k::linear_backward_weight(d3.data(), in, grad(w3_), t, h, f, true);
      if (w3b_ >= 0) k::linear_backward_bias(d3.data(), grad(w3b_), t, f, true);
    }
  }
  gathered.release();
  d1.release();
  d3.release();
  s.normed.release();
  Tensor dn_local;
  const float* dn = dn_full.data();
  if (ctx.tp_size() > 1) {
    auto op = ctx.op(layer_, "mlp.tp_enter", Pass::bwd_dgrad);
    if (sp) {
      dn_local = reduce_scatter_token_rows(ctx, dn_full.data(), dn_full.size(), kAct);
      dn_full.release();
      dn = dn_local.data();
    } else {
      all_reduce_tp(ctx, dn_full.data(), dn_full.size());
    }
  }
  Tensor dx = Tensor::uninitialized(kAct, static_cast<std::size_t>(tl) * h);
  {
    auto op = ctx.op(layer_, "mlp.norm", Pass::bwd_dgrad);
    norm_backward(c_, dn, x, param(norm_w_), s.norm, dx.data(), grad(norm_w_), grad(norm_b_), tl);
    k::residual_forward(dx.data(), dy, nullptr, dx.data(), tl, h);  // + the residual path's grad
  }
  s.release_all();
  return dx;
}

}  // namespace twinsim::exec
