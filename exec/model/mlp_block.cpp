#include "exec/model/mlp_block.hpp"

#include <cmath>
#include <string>

#include "exec/model/tp_region.hpp"
#include "models/op_names.hpp"

namespace twinsim::exec {

constexpr MemCategory kAct = MemCategory::activations;

std::vector<Tensor*> MlpSaved::tensors() {
  return {&norm.mean, &norm.rstd, &normed, &up1, &up2, &act, &lora_1, &lora_3, &lora_2};
}

void MlpSaved::release_all() {
  for (Tensor* t : tensors()) t->release();
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
  // adapters: a non-gated MLP's fc1 and fc2 are PEFT's `up` and `down` (models/lora.hpp)
  const auto adapters = [&](LoraModule module, const std::string& name, std::int64_t in, std::int64_t out) {
    for (ParamSpec& a : lora_param_specs(c, module, p + name, in, out)) s.push_back(std::move(a));
  };
  if (c.swiglu()) adapters(LoraModule::gate, "gate.", h, f);
  adapters(LoraModule::up, c.swiglu() ? "up." : "fc1.", h, f);
  adapters(LoraModule::down, c.swiglu() ? "down." : "fc2.", f, h);
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
  up_name_ = op_names::ffn_op_names(op_names::Ffn::dense, c.swiglu()).up;
  down_name_ = op_names::ffn_op_names(op_names::Ffn::dense, c.swiglu()).down;
  norm_w_ = p_.index_of(p + "norm.weight");
  w1_ = p_.index_of(p + up + ".weight");
  w2_ = p_.index_of(p + down + ".weight");
  if (c.swiglu()) w3_ = p_.index_of(p + "up.weight");
  const int h = c.hidden(), f = c.local_ffn();
  lora_1_ = LoraLinear(c, params, c.swiglu() ? LoraModule::gate : LoraModule::up, p + up + ".", h, f);
  if (c.swiglu()) lora_3_ = LoraLinear(c, params, LoraModule::up, p + "up.", h, f);
  lora_2_ = LoraLinear(c, params, LoraModule::down, p + down + ".", f, h);
  if (c.model.bias) {
    if (!c.rmsnorm()) norm_b_ = p_.index_of(p + "norm.bias");
    w1b_ = p_.index_of(p + up + ".bias");
    w2b_ = p_.index_of(p + down + ".bias");
    if (c.swiglu()) w3b_ = p_.index_of(p + "up.bias");
  }
}

void MlpBlock::forward(const ModelContext& ctx, const Tensor& x, Tensor& y, MlpSaved& s, Pass pass) const {
  with_storage(c_.storage, [&]<class T>() { forward_t(ctx, x.as<T>(), y.as<T>(), s, pass); });
}

template <class T>
void MlpBlock::forward_t(const ModelContext& ctx, const T* x, T* y, MlpSaved& s, Pass pass) const {
  const int tl = c_.local_tokens(), t = c_.tokens(), h = c_.hidden(), f = c_.local_ffn();
  const std::size_t inner = static_cast<std::size_t>(t) * f;
  s.normed = Tensor::uninitialized_of<T>(kAct, static_cast<std::size_t>(tl) * h);
  {
    auto op = ctx.op(layer_, op_names::kMlpNorm, pass);
    norm_forward(ctx, c_, x, p_.param<T>(norm_w_), p_.param<T>(norm_b_), s.normed.as<T>(), s.norm, tl);
  }
  Tensor gathered;
  const T* in = s.normed.as<T>();
  if (c_.sequence_parallel && ctx.tp_size() > 1) {
    auto op = ctx.op(layer_, op_names::kMlpTpEnter, pass);
    in = gather_token_rows_to_buffer(ctx, in, s.normed.size(), gathered);
  }
  s.up1 = Tensor::uninitialized_of<T>(kAct, inner);
  {
    auto op = ctx.op(layer_, up_name_, pass);
    ctx.kernels().linear_forward(in, p_.param<T>(w1_), p_.param<T>(w1b_), s.up1.as<T>(), t, h, f);
    if (c_.swiglu()) {
      s.up2 = Tensor::uninitialized_of<T>(kAct, inner);
      ctx.kernels().linear_forward(in, p_.param<T>(w3_), p_.param<T>(w3b_), s.up2.as<T>(), t, h, f);
    }
    if (lora_1_.active()) lora_1_.forward(ctx, in, s.up1.as<T>(), t, s.lora_1);
    if (lora_3_.active()) lora_3_.forward(ctx, in, s.up2.as<T>(), t, s.lora_3);
  }
  gathered.release();
  s.act = Tensor::uninitialized_of<T>(kAct, inner);
  {
    auto op = ctx.op(layer_, op_names::kMlpAct, pass);
    if (c_.swiglu()) ctx.kernels().swiglu_forward(s.up1.as<T>(), s.up2.as<T>(), s.act.as<T>(),
                                                  static_cast<long>(inner));
    else ctx.kernels().gelu_forward(s.up1.as<T>(), s.act.as<T>(), static_cast<long>(inner));
  }
  if (!s.for_backward) {
    s.up1.release();
    s.up2.release();
  }
  Tensor partial = Tensor::uninitialized_of<T>(kAct, static_cast<std::size_t>(t) * h);
  {
    auto op = ctx.op(layer_, down_name_, pass);
    ctx.kernels().linear_forward(s.act.as<T>(), p_.param<T>(w2_), nullptr, partial.as<T>(), t, f, h);
    if (lora_2_.active()) lora_2_.forward(ctx, s.act.as<T>(), partial.as<T>(), t, s.lora_2);
  }
  if (!s.for_backward) s.act.release();
  Tensor reduced;
  const T* branch = partial.as<T>();
  if (ctx.tp_size() > 1) {
    auto op = ctx.op(layer_, op_names::kMlpTpExit, pass);
    if (c_.sequence_parallel) {
      reduced = reduce_scatter_token_rows(ctx, partial.as<T>(), partial.size(), kAct);
      branch = reduced.as<T>();
    } else {
      all_reduce_tp(ctx, partial.as<T>(), partial.size());
    }
  }
  {
    auto op = ctx.op(layer_, op_names::kMlpResidual, pass);
    ctx.kernels().residual_forward(x, branch, p_.param<T>(w2b_), y, tl, h);
  }
}

Tensor MlpBlock::backward(const ModelContext& ctx, const Tensor& dy, const Tensor& x, MlpSaved& s) const {
  return with_storage(c_.storage, [&]<class T>() { return backward_t(ctx, dy.as<T>(), x.as<T>(), s); });
}

template <class T>
void MlpBlock::up_weight_backward(const ModelContext& ctx, const T* d1, const T* d3, const T* in, MlpSaved& s,
                                  T* dn) const {
  const int t = c_.tokens(), h = c_.hidden(), f = c_.local_ffn();
  {  // the adapters' grads, and their share of the input's grad
    auto op = ctx.op(layer_, up_name_, Pass::bwd_dgrad);
    if (lora_1_.active()) lora_1_.backward(ctx, d1, in, s.lora_1, dn, t);
    if (lora_3_.active()) lora_3_.backward(ctx, d3, in, s.lora_3, dn, t);
  }
  if (!base_trains(c_)) return;  // LoRA: the frozen matrices take no weight gradient
  auto op = ctx.op(layer_, up_name_, Pass::bwd_wgrad);
  ctx.kernels().linear_backward_weight(d1, in, p_.grad<T>(w1_), t, h, f, true);
  if (w1b_ >= 0) ctx.kernels().linear_backward_bias(d1, p_.grad<T>(w1b_), t, f, true);
  if (!c_.swiglu()) return;
  ctx.kernels().linear_backward_weight(d3, in, p_.grad<T>(w3_), t, h, f, true);
  if (w3b_ >= 0) ctx.kernels().linear_backward_bias(d3, p_.grad<T>(w3b_), t, f, true);
}

template <class T>
Tensor MlpBlock::backward_t(const ModelContext& ctx, const T* dy, const T* x, MlpSaved& s) const {
  const int tl = c_.local_tokens(), t = c_.tokens(), h = c_.hidden(), f = c_.local_ffn();
  const std::size_t inner = static_cast<std::size_t>(t) * f;
  const bool sp = c_.sequence_parallel && ctx.tp_size() > 1;
  if (w2b_ >= 0 && base_trains(c_)) {  // LoRA: the frozen bias has no grad
    auto op = ctx.op(layer_, op_names::kMlpResidual, Pass::bwd_dgrad);
    ctx.kernels().residual_backward(dy, p_.grad<T>(w2b_), tl, h, true);
  }
  Tensor dy_full;
  const T* dbranch = dy;
  if (sp) {
    auto op = ctx.op(layer_, op_names::kMlpTpExit, Pass::bwd_dgrad);
    dy_full = gather_token_rows(ctx, dy, static_cast<std::size_t>(tl) * h, kAct);
    dbranch = dy_full.as<T>();
  }
  Tensor dact = Tensor::uninitialized_of<T>(kAct, inner);
  {
    auto op = ctx.op(layer_, down_name_, Pass::bwd_dgrad);
    ctx.kernels().linear_backward_input(dbranch, p_.param<T>(w2_), dact.as<T>(), t, f, h);
    if (lora_2_.active()) lora_2_.backward(ctx, dbranch, s.act.as<T>(), s.lora_2, dact.as<T>(), t);
  }
  if (base_trains(c_)) {
    auto op = ctx.op(layer_, down_name_, Pass::bwd_wgrad);
    ctx.kernels().linear_backward_weight(dbranch, s.act.as<T>(), p_.grad<T>(w2_), t, f, h, true);
  }
  dy_full.release();
  s.act.release();
  Tensor d1 = Tensor::uninitialized_of<T>(kAct, inner), d3;
  {
    auto op = ctx.op(layer_, op_names::kMlpAct, Pass::bwd_dgrad);
    if (c_.swiglu()) {
      d3 = Tensor::uninitialized_of<T>(kAct, inner);
      ctx.kernels().swiglu_backward(dact.as<T>(), s.up1.as<T>(), s.up2.as<T>(), d1.as<T>(), d3.as<T>(),
                                    static_cast<long>(inner));
    } else {
      ctx.kernels().gelu_backward(dact.as<T>(), s.up1.as<T>(), d1.as<T>(), static_cast<long>(inner));
    }
  }
  dact.release();
  s.up1.release();
  s.up2.release();
  Tensor dn_full = Tensor::uninitialized_of<T>(kAct, static_cast<std::size_t>(t) * h);
  {
    auto op = ctx.op(layer_, up_name_, Pass::bwd_dgrad);
    ctx.kernels().linear_backward_input(d1.as<T>(), p_.param<T>(w1_), dn_full.as<T>(), t, h, f);
    if (c_.swiglu()) ctx.kernels().gemm_forward(d3.as<T>(), p_.param<T>(w3_), dn_full.as<T>(), t, h, f, false, false,
                                                1.0f, 1.0f);
  }
  Tensor gathered;
  const T* in = s.normed.as<T>();
  if (sp) {  // fc1's input was kept sharded; gather it again for the weight grad (§4.2.2)
    auto op = ctx.op(layer_, op_names::kMlpTpEnter, Pass::bwd_dgrad);
    in = gather_token_rows_to_buffer(ctx, in, s.normed.size(), gathered);
  }
  up_weight_backward(ctx, d1.as<T>(), d3.as<T>(), in, s, dn_full.as<T>());
  gathered.release();
  d1.release();
  d3.release();
  s.normed.release();
  Tensor dn_local;
  const T* dn = dn_full.as<T>();
  if (ctx.tp_size() > 1) {  // f backward: all-reduce, or with SP g backward: reduce-scatter
    auto op = ctx.op(layer_, op_names::kMlpTpEnter, Pass::bwd_dgrad);
    dn = tp_entry_backward<T>(ctx, sp, dn_full, dn_local);
  }
  Tensor dx = Tensor::uninitialized_of<T>(kAct, static_cast<std::size_t>(tl) * h);
  {
    auto op = ctx.op(layer_, op_names::kMlpNorm, Pass::bwd_dgrad);
    norm_backward(ctx, c_, dn, x, p_.param<T>(norm_w_), s.norm, dx.as<T>(), p_.grad<T>(norm_w_), p_.grad<T>(norm_b_),
                  tl);
    ctx.kernels().residual_forward(dx.as<T>(), dy, nullptr, dx.as<T>(), tl, h);  // + the residual path's grad
  }
  s.release_all();
  return dx;
}

}  // namespace twinsim::exec
