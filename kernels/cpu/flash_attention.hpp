#pragma once
// Causal self-attention, tiled flash-style (Dao et al. 2022 "FlashAttention"; Dao 2023
// "FlashAttention-2"): scores exist one [q_tile, kv_tile] block at a time, with an online
// softmax, so memory is linear in seq. The forward saves only out and the per-row
// logsumexp; the backward recomputes each score block from q, k and the logsumexp.
// q, k, v, out and their grads are stored as T (float, bf16 or fp16; common/storage.hpp);
// scores, running sums and gradient accumulators are float, and each output element is
// rounded once when stored. logsumexp is float.
#include "kernels/common/attention_shape.hpp"
#include "kernels/common/storage.hpp"

namespace twinsim::kernels::cpu {

struct FlashTiles {
  int q = 64;   // query rows per block (B_r in the paper)
  int kv = 64;  // key/value rows per block (B_c)
};

// out [batch, seq, heads, head_dim] (T); saves float logsumexp [batch, heads, seq].
template <class T>
void flash_attention_forward(const T* q, const T* k, const T* v, T* out, float* logsumexp,
                             const AttentionShape& shape, FlashTiles tiles = {});

// Gradients from q, k, v, out, dout (T) and logsumexp (float). dq, dk, dv are overwritten.
template <class T>
void flash_attention_backward(const T* q, const T* k, const T* v, const T* out,
                              const float* logsumexp, const T* dout, T* dq, T* dk, T* dv,
                              const AttentionShape& shape, FlashTiles tiles = {});

}  // namespace twinsim::kernels::cpu
