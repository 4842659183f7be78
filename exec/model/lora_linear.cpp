#include "exec/model/lora_linear.hpp"

namespace twinsim::exec {

std::vector<ParamSpec> lora_param_specs(const TransformerConfig& c, LoraModule module, const std::string& prefix,
                                        std::int64_t in, std::int64_t out) {
  if (!c.lora || !c.lora->targets(module)) return {};
  const std::int64_t r = c.lora->rank;
  // A Gaussian (the layer's own init spread), B zero: the adapted layer starts as the base (LoRA §4.1)
  return {{prefix + "lora_a", r, in, Shard::none, Init::normal, c.init_std},
          {prefix + "lora_b", out, r, Shard::none, Init::zeros, 0}};
}

std::vector<ParamSpec> freeze_base(const TransformerConfig& c, std::vector<ParamSpec> specs) {
  if (!c.lora) return specs;
  for (ParamSpec& s : specs) s.trainable = s.name.ends_with(".lora_a") || s.name.ends_with(".lora_b");
  return specs;
}

LoraLinear::LoraLinear(const TransformerConfig& c, ParamBlock& params, LoraModule module, const std::string& prefix,
                       int in, int out) {
  if (!c.lora || !c.lora->targets(module)) return;
  p_ = &params;
  a_ = params.index_of(prefix + "lora_a");
  b_ = params.index_of(prefix + "lora_b");
  rank_ = c.lora->rank;
  in_ = in;
  out_ = out;
  scale_ = static_cast<float>(c.lora->alpha / c.lora->rank);
}

template <class T>
void LoraLinear::forward(const ModelContext& ctx, const T* x, T* y, int tokens, Tensor& ax) const {
  ax = Tensor::uninitialized_of<T>(MemCategory::activations, static_cast<std::size_t>(tokens) * rank_);
  ctx.kernels().linear_forward(x, p_->param<T>(a_), nullptr, ax.as<T>(), tokens, in_, rank_);
  // y [tokens, out] += s (A x) [tokens, r] B^T
  ctx.kernels().gemm_forward(ax.as<T>(), p_->param<T>(b_), y, tokens, out_, rank_, false, true, scale_, 1.0f);
}

template <class T>
void LoraLinear::backward(const ModelContext& ctx, const T* dy, const T* x, Tensor& ax, T* dx, int tokens) const {
  // dB [out, r] += s dy^T (A x)
  ctx.kernels().gemm_forward(dy, ax.as<T>(), p_->grad<T>(b_), out_, rank_, tokens, true, false, scale_, 1.0f);
  ax.release();
  // d(A x) [tokens, r] = s dy B
  Tensor dax = Tensor::uninitialized_of<T>(MemCategory::activations, static_cast<std::size_t>(tokens) * rank_);
  ctx.kernels().gemm_forward(dy, p_->param<T>(b_), dax.as<T>(), tokens, rank_, out_, false, false, scale_, 0.0f);
  // dA [r, in] += d(A x)^T x;  dx [tokens, in] += d(A x) A
  ctx.kernels().linear_backward_weight(dax.as<T>(), x, p_->grad<T>(a_), tokens, in_, rank_, true);
  ctx.kernels().gemm_forward(dax.as<T>(), p_->param<T>(a_), dx, tokens, in_, rank_, false, false, 1.0f, 1.0f);
}

#define TWINSIM_LORA_LINEAR(T)                                                                 \
  template void LoraLinear::forward<T>(const ModelContext&, const T*, T*, int, Tensor&) const; \
  template void LoraLinear::backward<T>(const ModelContext&, const T*, const T*, Tensor&, T*, int) const;
TWINSIM_LORA_LINEAR(float)
TWINSIM_LORA_LINEAR(kernels::bf16)
TWINSIM_LORA_LINEAR(kernels::fp16)
#undef TWINSIM_LORA_LINEAR

}  // namespace twinsim::exec
