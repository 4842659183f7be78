#pragma once
// The MLP half of a mixture-of-experts layer (DeepSeekMoE, Dai et al. 2024 §3; GShard,
// Lepikhin et al. 2021 §2):
//   n = norm(x);  p = softmax(n W_r^T)             (router, fp32 probabilities)
//   y = x + sum over the top_k experts e of p_e FFN_e(n) + FFN_shared(n)
// The top_k probabilities weight the experts as they are, not renormalised over the chosen
// ones (DeepSeekMoE's scoring_func softmax with norm_topk_prob false); ties go to the
// lower expert index. Tokens are permuted into one buffer grouped by expert, each expert's
// SwiGLU/GeLU FFN runs on its rows, and the weighted outputs are added back per token
// (Megatron-core's permute / unpermute). The shared experts are one FFN of their summed
// width that every token visits (DeepSeek's DeepseekMLP with n_shared_experts x width).
//
// Tensor parallelism shards every expert's FFN like the dense MLP (column-parallel up,
// row-parallel down; Megatron-core's expert tensor parallelism = tp), the router is
// replicated; the partial outputs meet in one all-reduce.
//
// Expert parallelism (ep > 1; GShard §2.2, Megatron-core's MoEAlltoAllTokenDispatcher): rank
// d of the EP group holds experts [d E/ep, (d + 1) E/ep) and every rank routes its own
// tokens; the permuted rows go to their experts' ranks in one all-to-all (moe.dispatch), the
// experts run on what arrived, and the outputs come back in another (moe.combine); the
// backward sends the output grads the same way and the input grads back. Each all-to-all
// moves exactly the routed rows, pairwise. Sequence parallelism is not implemented
// (transformer_config.cpp refuses it).
//
// MoE parallel folding (plan.expert_tp != plan.tp; Megatron-core's expert TP and EP groups
// laid over tp x cp x dp apart from attention's, process_groups.hpp): the experts are split
// expert_tp ways, and a TP group's tp / expert_tp expert-TP groups each route one slice of
// its tokens (which TP replicates here, as Megatron's sequence parallelism would have split
// them): rank r routes slice r / expert_tp over its EP group. Rows outside a rank's slice
// add nothing to its partial sums, so the exit all-reduce over TP that sums the expert TP
// partials also assembles the slices, and the backward's all-reduces of the router's
// probability grads and of the experts' input grads do the same.
#include <vector>

#include "exec/model/model_context.hpp"
#include "exec/model/norm_op.hpp"
#include "exec/model/transformer_config.hpp"
#include "exec/model/weights.hpp"
#include "models/op_names.hpp"

namespace twinsim::exec {

struct MoeSaved {
  NormSaved norm;
  Tensor normed;     // [tokens, hidden]: router, routed experts' gather and shared experts' input
  Tensor probs;      // [tokens, experts] fp32: the router's softmax
  // The routing: row r of the permuted buffers is token row_token[r] sent to the expert
  // whose rows [expert_rows[e], expert_rows[e + 1]) hold it (tokens ascending in each).
  std::vector<int> row_token, expert_rows;
  Tensor permuted;   // [tokens * top_k, hidden]: each expert's input rows
  Tensor up1, up2;   // [tokens * top_k, local expert width]: fc1 / gate, and SwiGLU's up
  Tensor act;        // [tokens * top_k, local expert width]: the down projection's input
  Tensor expert_out; // [tokens * top_k, hidden]: each expert's (partial) output, for the
                     // grad of its weight p_e (unpermute's saved tokens in Megatron-core)
  Tensor shared_up1, shared_up2, shared_act;  // [tokens, local shared width]
  // Expert parallelism: `permuted`, up1, up2 and act hold the rows this rank's experts ran,
  // from every rank of the group: local expert j's are rows [local_rows[j], local_rows[j + 1]),
  // source rank by source rank; recv_counts[src * local experts + j] of them came from src.
  std::vector<int> local_rows, recv_counts;
  bool for_backward = true;  // false (serving): each tensor goes once its last user has run
  std::vector<Tensor*> tensors();
  void release_all();
};

std::vector<ParamSpec> moe_param_specs(const TransformerConfig& c, int layer);

class MoeBlock {
 public:
  MoeBlock(const TransformerConfig& c, int layer, ParamBlock& params);
  // y may be x (the residual add works in place). x, y and every activation but the
  // router's probabilities are in c.storage.
  void forward(const ModelContext& ctx, const Tensor& x, Tensor& y, MoeSaved& s, Pass pass) const;
  // Returns the grad of x (residual path included); weight grads accumulate; each saved
  // tensor and grad is freed once its last user has run.
  Tensor backward(const ModelContext& ctx, const Tensor& dy, const Tensor& x, MoeSaved& s) const;

 private:
  struct Ffn {  // one expert's (or the shared experts') matrices; w3 is SwiGLU's up (-1: GeLU)
    int w1 = -1, w3 = -1, w2 = -1;
  };
  const TransformerConfig& c_;
  int layer_;
  ParamBlock& p_;
  int norm_w_, norm_b_ = -1, router_w_;
  std::vector<Ffn> experts_;  // this rank's: experts [c.first_expert(), + c.local_experts())
  Ffn shared_;  // w1 -1: no shared experts

  struct FfnSaved {  // an FFN's saved tensors in MoeSaved
    Tensor *up1, *up2, *act;
  };
  op_names::FfnOpNames expert_ops() const;  // the op names the passes are timed under
  op_names::FfnOpNames shared_ops() const;
  int local_expert_width() const;
  int local_shared_width() const;
  void route(MoeSaved& s) const;  // top_k of s.probs -> s.row_token, s.expert_rows
  // Expert parallelism: the rows per expert each rank sends each other, exchanged into s's
  // layout (the forward's; the backward reuses them); then rows in global expert order
  // (s.expert_rows) to the ranks holding their experts, and back.
  void exchange_counts(const ModelContext& ctx, MoeSaved& s, Pass pass) const;
  template <class T>
  Tensor to_owners(const ModelContext& ctx, const T* rows, const MoeSaved& s) const;
  template <class T>
  Tensor from_owners(const ModelContext& ctx, const T* local, const MoeSaved& s) const;

  int routed_rows() const;  // the rows this rank routes: its tokens' slice x top_k
  const std::vector<int>& local_bounds(const ModelContext& ctx, const MoeSaved& s) const;

  // The forward, step by step (forward_t runs them in order).
  template <class T>
  void forward_t(const ModelContext& ctx, const T* x, T* y, MoeSaved& s, Pass pass) const;
  template <class T>
  void router_forward(const ModelContext& ctx, MoeSaved& s, Pass pass) const;
  template <class T>
  void permute(const ModelContext& ctx, const MoeSaved& s, T* into) const;
  template <class T>
  void dispatch(const ModelContext& ctx, MoeSaved& s, Pass pass) const;
  template <class T>
  void experts_up(const ModelContext& ctx, MoeSaved& s, Pass pass) const;
  template <class T>
  void experts_down_and_combine(const ModelContext& ctx, MoeSaved& s, T* partial, Pass pass) const;
  template <class T>
  void unpermute(const ModelContext& ctx, const MoeSaved& s, T* partial) const;
  template <class T>
  void shared_forward(const ModelContext& ctx, MoeSaved& s, T* partial, Pass pass) const;
  template <class T>
  void ffn_backward(const ModelContext& ctx, const op_names::FfnOpNames& ops, const std::vector<int>& bounds,
                    const std::vector<Ffn>& w, int f, const T* dout, Tensor* owned_dout, const T* in, FfnSaved& saved,
                    Tensor& din) const;
  template <class T>
  Tensor backward_t(const ModelContext& ctx, const T* dy, const T* x, MoeSaved& s) const;
  template <class T>
  Tensor combine_backward(const ModelContext& ctx, const T* dy, MoeSaved& s, Tensor& dprobs) const;
  template <class T>
  void permute_backward(const ModelContext& ctx, const MoeSaved& s, const T* dpermuted, T* dn) const;
  template <class T>
  void router_backward(const ModelContext& ctx, MoeSaved& s, Tensor& dprobs, T* dn) const;
};

}  // namespace twinsim::exec
