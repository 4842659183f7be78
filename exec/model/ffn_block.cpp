#include "exec/model/ffn_block.hpp"

namespace twinsim::exec {

std::vector<ParamSpec> ffn_param_specs(const TransformerConfig& c, int layer) {
  return c.model.is_moe_layer(layer) ? moe_param_specs(c, layer) : mlp_param_specs(c, layer);
}

FfnBlock::FfnBlock(const TransformerConfig& c, int layer, ParamBlock& params) {
  if (c.model.is_moe_layer(layer)) moe_.emplace(c, layer, params);
  else dense_.emplace(c, layer, params);
}

void FfnBlock::forward(const ModelContext& ctx, const Tensor& x, Tensor& y, FfnSaved& s, Pass pass) const {
  if (moe_) {
    s.moe.for_backward = s.for_backward;
    moe_->forward(ctx, x, y, s.moe, pass);
  } else {
    s.dense.for_backward = s.for_backward;
    dense_->forward(ctx, x, y, s.dense, pass);
  }
}

Tensor FfnBlock::backward(const ModelContext& ctx, const Tensor& dy, const Tensor& x, FfnSaved& s) const {
  return moe_ ? moe_->backward(ctx, dy, x, s.moe) : dense_->backward(ctx, dy, x, s.dense);
}

}  // namespace twinsim::exec
