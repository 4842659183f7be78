#pragma once
// The second half of a transformer layer: the dense MLP (mlp_block.hpp), or on a
// mixture-of-experts layer (ModelSpec::is_moe_layer: past the model's leading dense
// layers) the router with its experts (moe_block.hpp). The layer code calls this one
// interface either way.
#include <optional>
#include <vector>

#include "exec/model/mlp_block.hpp"
#include "exec/model/moe_block.hpp"

namespace twinsim::exec {

struct FfnSaved {
  MlpSaved dense;
  MoeSaved moe;
  // false (serving): nothing is kept for a backward (MlpSaved::for_backward)
  bool for_backward = true;
  std::vector<Tensor*> tensors() {
    std::vector<Tensor*> out = dense.tensors();
    for (Tensor* t : moe.tensors()) out.push_back(t);
    return out;
  }
  void release_all() {
    dense.release_all();
    moe.release_all();
  }
};

// The layer's FFN parameters: the dense MLP's, or the norm, router and experts.
std::vector<ParamSpec> ffn_param_specs(const TransformerConfig& c, int layer);

class FfnBlock {
 public:
  FfnBlock(const TransformerConfig& c, int layer, ParamBlock& params);
  void forward(const ModelContext& ctx, const Tensor& x, Tensor& y, FfnSaved& s, Pass pass) const;
  Tensor backward(const ModelContext& ctx, const Tensor& dy, const Tensor& x, FfnSaved& s) const;

 private:
  std::optional<MlpBlock> dense_;
  std::optional<MoeBlock> moe_;
};

}  // namespace twinsim::exec
