#pragma once
// Vocab-parallel token embedding plus learned positions (Megatron VocabParallelEmbedding,
// Shoeybi et al. 2019 §3): TP rank r owns vocabulary rows [r V/t, (r+1) V/t); a token
// outside them contributes zeros, and the partial rows meet in an all-reduce, or a
// reduce-scatter with sequence parallelism. Positions are replicated and added after.
#include <vector>

#include "exec/model/model_context.hpp"
#include "exec/model/transformer_config.hpp"
#include "exec/model/weights.hpp"

namespace twinsim::exec {

// The word table, alone in its block so a tied copy on the last pipeline stage has the
// same flat layout (its grads are summed with the first stage's).
std::vector<ParamSpec> word_embedding_specs(const TransformerConfig& c);
std::vector<ParamSpec> position_embedding_specs(const TransformerConfig& c);  // empty for RoPE

class Embedding {
 public:
  // position: null for RoPE models
  Embedding(const TransformerConfig& c, ParamBlock& word, ParamBlock* position);
  // tokens [micro_batch * seq_len] -> x [local_tokens, hidden]
  // x in c.storage (fp32, or bf16 / fp16 for mixed precision)
  void forward(const ModelContext& ctx, const int* tokens, Tensor& x, Pass pass) const;
  // Accumulates the table grads from dx [local_tokens, hidden].
  void backward(const ModelContext& ctx, const int* tokens, const Tensor& dx) const;

 private:
  const TransformerConfig& c_;
  ParamBlock& word_;
  ParamBlock* position_;
  int first_local_token(const ModelContext& ctx) const;
  template <class T>
  void forward_t(const ModelContext& ctx, const int* tokens, T* x, Pass pass) const;
  template <class T>
  void backward_t(const ModelContext& ctx, const int* tokens, const T* dx) const;
};

}  // namespace twinsim::exec
