#pragma once
// The MLP half of a transformer layer, Megatron-style tensor parallel:
//   y = x + fc2(act(fc1(norm(x)))) + b_fc2
// fc1 (or gate and up for SwiGLU, Shazeer 2020) is column-parallel over the FFN width,
// fc2/down is row-parallel; partial sums meet in an all-reduce, or a reduce-scatter with
// sequence parallelism (Shoeybi et al. 2019 Fig. 3a; Korthikanti et al. 2022 §4.2.2).
#include <vector>

#include "exec/model/lora_linear.hpp"
#include "exec/model/model_context.hpp"
#include "exec/model/norm_op.hpp"
#include "exec/model/transformer_config.hpp"
#include "exec/model/weights.hpp"

namespace twinsim::exec {

struct MlpSaved {
  NormSaved norm;
  Tensor normed;  // [local_tokens, hidden]: the fc1 input (re-gathered under SP)
  Tensor up1;     // fc1 output (GeLU input) or gate (SwiGLU): [tokens, local_ffn]
  Tensor up2;     // SwiGLU up: [tokens, local_ffn]
  Tensor act;     // activation output, the fc2 input: [tokens, local_ffn]
  Tensor lora_1, lora_3, lora_2;  // LoRA adapters' A x [tokens, r] beside fc1/gate, up, fc2/down
  // false (serving): nothing is kept for a backward; the forward frees fc1's outputs once
  // the activation has run and the activation's once fc2 has, as a no-grad forward does
  bool for_backward = true;
  std::vector<Tensor*> tensors();
  void release_all();
};

std::vector<ParamSpec> mlp_param_specs(const TransformerConfig& c, int layer);

class MlpBlock {
 public:
  MlpBlock(const TransformerConfig& c, int layer, ParamBlock& params);
  // y may be x (the residual add works in place).
  // x, y and every activation are in c.storage (fp32, or bf16 / fp16 for mixed precision).
  void forward(const ModelContext& ctx, const Tensor& x, Tensor& y, MlpSaved& s, Pass pass) const;
  // Returns the grad of x (residual path included); weight grads accumulate. Frees each
  // saved tensor and each grad once its last user has run, as autograd does, and
  // allocates a grad when the op that produces it runs.
  Tensor backward(const ModelContext& ctx, const Tensor& dy, const Tensor& x, MlpSaved& s) const;

 private:
  const TransformerConfig& c_;
  int layer_;
  ParamBlock& p_;
  int norm_w_, norm_b_ = -1, w1_, w1b_ = -1, w3_ = -1, w3b_ = -1, w2_, w2b_ = -1;  // w3: SwiGLU up
  LoraLinear lora_1_, lora_3_, lora_2_;  // beside w1_, w3_, w2_; inactive unless targeted
  const char* up_name_;    // "mlp.fc1" or "mlp.gate_up"
  const char* down_name_;  // "mlp.fc2" or "mlp.down"

  // The passes for the storage type T (float, kernels::bf16 or kernels::fp16).
  template <class T>
  void forward_t(const ModelContext& ctx, const T* x, T* y, MlpSaved& s, Pass pass) const;
  template <class T>
  Tensor backward_t(const ModelContext& ctx, const T* dy, const T* x, MlpSaved& s) const;
  // fc1 (gate) and up's weight grads from their output grads d1, d3 and input `in`; under LoRA
  // their adapters' grads instead, and the adapters' share of the input grad added to dn
  template <class T>
  void up_weight_backward(const ModelContext& ctx, const T* d1, const T* d3, const T* in, MlpSaved& s, T* dn) const;
};

}  // namespace twinsim::exec
