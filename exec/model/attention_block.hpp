#pragma once
// The attention half of a transformer layer, Megatron-style tensor parallel:
//   y = x + proj(attention(qkv(norm(x)))) + b_proj
// QKV is column-parallel (each TP rank owns heads/tp query heads and kv_heads/tp K/V
// heads), proj is row-parallel, their partial sums meet in an all-reduce, or with
// sequence parallelism a reduce-scatter (Shoeybi et al. 2019 §3, Fig. 3b;
// Korthikanti et al. 2022 §4.2.2). x and y are this rank's residual rows [local_tokens, hidden].
#include <optional>
#include <vector>

#include "exec/model/lora_linear.hpp"
#include "exec/model/mla_block.hpp"
#include "exec/model/model_context.hpp"
#include "exec/model/norm_op.hpp"
#include "exec/model/transformer_config.hpp"
#include "exec/model/weights.hpp"

namespace twinsim::exec {

struct AttentionSaved {
  NormSaved norm;
  Tensor normed;   // norm output [local_tokens, hidden]: the QKV input (re-gathered under SP)
  Tensor q, k, v;  // after RoPE: [tokens, local_q_width], [tokens, local_kv_width]
  Tensor out;      // attention output [tokens, local_q_width]: the proj input
  Tensor probs;    // plain attention: [batch, local_heads, seq, seq]
  Tensor lse;      // flash attention: [batch, local_heads, seq], fp32
  MlaSaved mla;    // a multi-head latent attention layer's instead (mla_block.hpp)
  Tensor lora_q, lora_k, lora_v, lora_o;  // LoRA adapters' A x [tokens, r] (lora_linear.hpp)
  std::vector<Tensor*> tensors();  // every tensor above, MLA's included
  void release_all();
};

// The attention's parameters (a model with MLA: mla_param_specs).
std::vector<ParamSpec> attention_param_specs(const TransformerConfig& c, int layer);

class AttentionBlock {
 public:
  AttentionBlock(const TransformerConfig& c, int layer, ParamBlock& params);
  // pass is fwd, or recompute when full recompute replays the layer in backward.
  // x, y and every activation are in c.storage (fp32, or bf16 / fp16 for mixed precision).
  void forward(const ModelContext& ctx, const Tensor& x, Tensor& y, AttentionSaved& s, Pass pass) const;
  // Returns the grad of x (residual path included); weight grads accumulate. Frees each
  // saved tensor and each grad once its last user has run, as autograd does, and
  // allocates a grad when the op that produces it runs.
  Tensor backward(const ModelContext& ctx, const Tensor& dy, const Tensor& x, AttentionSaved& s) const;
  // Selective recompute (Korthikanti §5): drop what only the attention core's backward needs.
  void drop_core_activations(AttentionSaved& s) const;

 private:
  const TransformerConfig& c_;
  int layer_;
  ParamBlock& p_;
  int norm_w_ = -1, norm_b_ = -1, q_w_ = -1, k_w_ = -1, v_w_ = -1, q_b_ = -1, k_b_ = -1, v_b_ = -1, proj_w_ = -1,
      proj_b_ = -1;
  LoraLinear lora_q_, lora_k_, lora_v_, lora_o_;  // inactive unless training.lora targets them
  std::optional<MlaBlock> mla_;  // the model's attention is MLA: this runs it

  // The passes for the storage type T (float, kernels::bf16 or kernels::fp16).
  template <class T>
  void forward_t(const ModelContext& ctx, const T* x, T* y, AttentionSaved& s, Pass pass) const;
  template <class T>
  Tensor backward_t(const ModelContext& ctx, const T* dy, const T* x, AttentionSaved& s) const;
  template <class T>
  void core_backward(const ModelContext& ctx, AttentionSaved& s, Tensor& dout, Tensor& dq, Tensor& dk,
                     Tensor& dv) const;
  // Q, K, V's weight (and bias) grads from their output grads and input `in`; under LoRA their
  // adapters' grads instead, and the adapters' share of the input grad added to dn
  template <class T>
  void qkv_weight_backward(const ModelContext& ctx, const T* dq, const T* dk, const T* dv, const T* in,
                           AttentionSaved& s, T* dn) const;
  template <class T>
  void core_forward(const ModelContext& ctx, const AttentionSaved& s, T* out, T* probs, float* lse) const;
};

}  // namespace twinsim::exec
