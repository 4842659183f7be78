#pragma once
// Autoregressive inference on one rank's tensor-parallel shard of the whole model (one
// pipeline stage holding embedding, every layer and the head): prefill appends a prompt
// to the KV cache, decode appends one token per sequence at a time. The new tokens'
// queries attend to every cached key/value of their sequence up to their own position,
// so a decode step costs O(length) instead of re-running the prefix (Pope et al. 2022,
// "Efficiently Scaling Transformer Inference", §2). Keys are cached after RoPE. Under TP
// each rank caches its kv_heads/tp heads (Shoeybi et al. 2019 §3), in category kv_cache.
// Multi-head latent attention caches its latent instead (decoder_mla.cpp).
#include <cstdint>
#include <vector>

#include "exec/model/ffn_block.hpp"
#include "exec/model/transformer.hpp"

namespace twinsim::exec {

class Decoder {
 public:
  // `stage` must hold the whole model (pp = 1) and outlive the decoder; the cache holds
  // `batch` sequences of up to `max_len` tokens.
  Decoder(TransformerStage& stage, int batch, int max_len);
  Decoder(const Decoder&) = delete;
  Decoder& operator=(const Decoder&) = delete;

  // Appends tokens [batch, n] (row-major) at positions [length(), length() + n) and returns
  // each sequence's logits at its last new position over this rank's vocabulary shard,
  // [batch, local_vocab]. Prefill is one call with the prompt, decode calls with n = 1.
  // The op names are the training ones with pass "fwd" (attn.core reads the cache).
  Tensor forward(const ModelContext& ctx, const int* tokens, int n);

  // Prefix caching: every sequence starts from `from`'s first sequence's first `n` cached
  // tokens (the shared prompt prefix, computed once), copied into this empty cache.
  void start_from_prefix(const Decoder& from, int n);

  // Forgets every cached token from position `n` on (0 <= n <= length()): the next forward
  // appends at `n`, overwriting them. A decode run again from the same prefill (issue 61).
  void rewind(int n);

  int length() const { return length_; }
  int batch() const { return batch_; }
  std::int64_t kv_cache_bytes() const;  // this rank's K and V caches

 private:
  TransformerStage& stage_;
  TransformerConfig step_;  // the stage's config with [batch, n] tokens of the current call
  int batch_, max_len_, length_ = 0;
  std::vector<ParamBlock*> layers_;
  std::vector<FfnBlock> mlp_;  // bound to step_
  std::vector<Tensor> k_cache_, v_cache_;  // per layer [batch, max_len, local_kv_width]
  // Multi-head latent attention instead: per layer [batch, max_len, kv_lora + rope], the
  // normed latent c_KV and the rotated RoPE key, whole on every TP rank (vLLM's MLA cache)
  std::vector<Tensor> latent_cache_;
  ParamBlock *word_ = nullptr, *position_ = nullptr, *head_norm_ = nullptr, *output_ = nullptr;

  void embed(const ModelContext& ctx, const int* tokens, int n, float* x) const;
  Tensor attention(const ModelContext& ctx, int i, const float* x, int n);  // x + attention(x)
  // decoder_mla.cpp: the layer, then its steps
  Tensor mla_attention(const ModelContext& ctx, int i, const float* x, int n);
  Tensor mla_query(const ModelContext& ctx, int i, const float* normed, int n);
  void mla_append_latents(const ModelContext& ctx, int i, const float* normed, float* q, int n);
  void mla_prefill_attend(const ModelContext& ctx, int i, const float* q, float* out, int n);
  void mla_decode_attend(const ModelContext& ctx, int i, const float* q, float* out);
  void attend(const ModelContext& ctx, int i, const float* q, float* out, int n) const;
  Tensor head(const ModelContext& ctx, const float* x, int n) const;
};

// Greedy decoding: each sequence's argmax over the whole vocabulary from every TP rank's
// logit shard [batch, local_vocab] (ties to the lowest token id, as torch.argmax).
std::vector<int> greedy_tokens(const ModelContext& ctx, const float* logits, int batch, int local_vocab,
                               int vocab_start);

}  // namespace twinsim::exec
