#pragma once
// Causal self-attention, tiled flash-style (Dao et al. 2022 "FlashAttention"; Dao 2023
// "FlashAttention-2"): scores exist one [q_tile, kv_tile] block at a time, with an online
// softmax, so memory is linear in seq. The forward saves only out and the per-row
// logsumexp; the backward recomputes each score block from q, k and the logsumexp.
#include "kernels/common/attention_shape.hpp"

namespace twinsim::kernels::cpu {

struct FlashTiles {
  int q = 64;   // query rows per block (B_r in the paper)
  int kv = 64;  // key/value rows per block (B_c)
};

// out [batch, seq, heads, head_dim]; saves logsumexp [batch, heads, seq].
void flash_attention_forward(const float* q, const float* k, const float* v, float* out,
                             float* logsumexp, const AttentionShape& shape,
                             FlashTiles tiles = {});

// Gradients from q, k, v, out, logsumexp and dout. dq, dk, dv are overwritten.
void flash_attention_backward(const float* q, const float* k, const float* v, const float* out,
                              const float* logsumexp, const float* dout, float* dq, float* dk,
                              float* dv, const AttentionShape& shape, FlashTiles tiles = {});

}  // namespace twinsim::kernels::cpu
