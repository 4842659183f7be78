#pragma once
// The attention half of a layer with multi-head latent attention (DeepSeek-V2, Liu et al.
// 2024, §2.1; Megatron-core MultiLatentAttention):
//   n = norm(x)
//   q = W_UQ rmsnorm(W_DQ n)            (or q = W_Q n without Q's bottleneck, q_lora_rank 0)
//   [c_KV | k_R] = W_DKV n;  [k_C | v] = W_UKV rmsnorm(c_KV)
//   per head: q = [q_C | rope(q_R)], k = [k_C | rope(k_R)] (k_R shared by all heads)
//   y = x + W_O attention(q, k, v)
// Q/K heads are qk_nope + qk_rope wide, V heads v_head_dim (the attention kernels take V's
// width apart). Tensor parallelism splits the heads: the up-projections are
// column-parallel, W_O row-parallel; the down-projections and their norms run duplicated
// on every TP rank, so the grads of the latents (and of the shared k_R) are summed over the
// TP group before the duplicated weights use them. Sequence parallelism and selective
// recomputation are not implemented (transformer_config.cpp refuses them); serving runs
// from the latent cache in decoder_mla.cpp.
#include <vector>

#include "exec/model/model_context.hpp"
#include "exec/model/norm_op.hpp"
#include "exec/model/transformer_config.hpp"
#include "exec/model/weights.hpp"

namespace twinsim::exec {

struct MlaSaved {
  NormSaved norm;
  Tensor normed;                 // [tokens, hidden]: the down-projections' (and W_Q's) input
  Tensor q_latent_in, q_rstd;    // Q's bottleneck before its RMSNorm [tokens, q_lora_rank], and 1/rms
  Tensor q_latent;               // ... after it: W_UQ's input
  Tensor kv_latent_in, kv_rstd;  // c_KV before its RMSNorm [tokens, kv_lora_rank], and 1/rms
  Tensor kv_latent;              // ... after it: W_UKV's input
  Tensor q, k;                   // [tokens, local heads, nope + rope], after RoPE
  Tensor v;                      // [tokens, local heads, v_head_dim]
  Tensor out;                    // attention output [tokens, local heads x v_head_dim]: W_O's input
  Tensor probs;                  // plain attention: [batch, local heads, seq, seq]
  Tensor lse;                    // flash attention: [batch, local heads, seq], fp32
  std::vector<Tensor*> tensors();
  void release_all();
};

std::vector<ParamSpec> mla_param_specs(const TransformerConfig& c, int layer);

class MlaBlock {
 public:
  MlaBlock(const TransformerConfig& c, int layer, ParamBlock& params);
  void forward(const ModelContext& ctx, const Tensor& x, Tensor& y, MlaSaved& s, Pass pass) const;
  // Returns the grad of x (residual path included); weight grads accumulate.
  Tensor backward(const ModelContext& ctx, const Tensor& dy, const Tensor& x, MlaSaved& s) const;

 private:
  const TransformerConfig& c_;
  int layer_;
  ParamBlock& p_;
  int norm_w_, q_w_ = -1, q_down_ = -1, q_norm_ = -1, q_up_ = -1, kv_down_, kv_norm_, kv_up_, proj_w_;

  int heads() const { return c_.local_heads(); }
  int nope() const { return static_cast<int>(c_.model.mla->qk_nope_head_dim); }
  int rope() const { return static_cast<int>(c_.model.mla->qk_rope_head_dim); }
  int qk_dim() const { return nope() + rope(); }
  int v_dim() const { return static_cast<int>(c_.model.mla->v_head_dim); }
  int q_rank() const { return static_cast<int>(c_.model.mla->q_lora_rank); }
  int kv_rank() const { return static_cast<int>(c_.model.mla->kv_lora_rank); }

  // The forward, step by step (forward_t runs them in order)
  template <class T>
  void forward_t(const ModelContext& ctx, const T* x, T* y, MlaSaved& s, Pass pass) const;
  template <class T>
  void q_forward(const ModelContext& ctx, MlaSaved& s, Pass pass) const;
  template <class T>
  Tensor kv_forward(const ModelContext& ctx, MlaSaved& s, Pass pass) const;
  template <class T>
  void rope_forward(const ModelContext& ctx, MlaSaved& s, T* k_rope, Pass pass) const;
  // ... and the backward's
  template <class T>
  Tensor backward_t(const ModelContext& ctx, const T* dy, const T* x, MlaSaved& s) const;
  template <class T>
  Tensor rope_backward(const ModelContext& ctx, T* dq, const T* dk) const;
  template <class T>
  Tensor kv_up_backward(const ModelContext& ctx, MlaSaved& s, Tensor& dk, Tensor& dv, Tensor& dk_rope) const;
  template <class T>
  Tensor q_up_backward(const ModelContext& ctx, MlaSaved& s, const T* dq) const;
  template <class T>
  void kv_down_backward(const ModelContext& ctx, MlaSaved& s, Tensor& dlatent, T* dn) const;
  template <class T>
  void q_down_backward(const ModelContext& ctx, MlaSaved& s, Tensor& dq_latent, T* dn) const;
};

}  // namespace twinsim::exec
