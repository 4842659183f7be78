#pragma once
// The last stage's head: final norm, logits over this rank's vocabulary shard, and the
// vocab-parallel softmax cross-entropy of Megatron (Shoeybi et al. 2019 §3: each rank
// keeps its [tokens, V/t] logits; only per-token max, sum of exponentials and the target
// logit cross the TP group, 3 floats per token instead of the full logits).
#include <vector>

#include "exec/model/model_context.hpp"
#include "exec/model/norm_op.hpp"
#include "exec/model/transformer_config.hpp"
#include "exec/model/weights.hpp"

namespace twinsim::exec {

std::vector<ParamSpec> final_norm_specs(const TransformerConfig& c);
// The output layer [vocab, hidden], vocab-parallel. A tied model's last stage keeps a
// copy named like the word embedding, so it starts from the same values.
std::vector<ParamSpec> output_layer_specs(const TransformerConfig& c);

struct HeadSaved {
  Tensor input;  // the stage's residual rows [local_tokens, hidden]
  NormSaved norm;
  Tensor normed;  // [local_tokens, hidden]
  Tensor logits;  // [tokens, local_vocab], fp32 whatever the storage type
  Tensor lse;     // [tokens] logsumexp over the whole vocabulary
  void release_all();
};

// Mean over tokens of -log softmax(logits)[target] with the vocabulary split over TP: the
// stages of kernels/cpu/vocab_parallel_loss.hpp through the backend's table, the per-token
// statistics all-reduced over ctx.tp on device buffers (no logits cross the group). logits
// [tokens, local_vocab], targets and lse [tokens] are device buffers; fills lse. Every TP rank
// returns the same loss (the host reads tokens floats). The stages run as head.loss ops of
// `pass`, the all-reduces as head.loss_reduce (the simulator's op list). The backward is the
// table's vocab_parallel_loss_backward, with no collective.
float vocab_parallel_cross_entropy(const ModelContext& ctx, Pass pass, const float* logits, const int* targets,
                                   float* lse, int tokens, int local_vocab, int vocab_start);

class Head {
 public:
  Head(const TransformerConfig& c, ParamBlock& norm, ParamBlock& output, int output_slot);
  float forward(const ModelContext& ctx, const int* targets, HeadSaved& s, Pass pass) const;  // s.input set
  // The grad of s.input [local_tokens, hidden] from the loss grad dloss (1 / micro-batches,
  // times any loss scale). Frees what s holds as soon as its last user has run, as
  // autograd frees a node's saved tensors: the logits (their grads by then) and the
  // output layer's input go before the final norm's grad is allocated.
  Tensor backward(const ModelContext& ctx, const int* targets, float dloss, HeadSaved& s) const;

 private:
  const TransformerConfig& c_;
  ParamBlock& norm_;
  ParamBlock& out_;
  int out_slot_;

  // The passes for the storage type T of the stage's input, norm and weights.
  template <class T>
  float forward_t(const ModelContext& ctx, const int* targets, HeadSaved& s, Pass pass) const;
  template <class T>
  Tensor backward_t(const ModelContext& ctx, const int* targets, float dloss, HeadSaved& s) const;
};

}  // namespace twinsim::exec
