#pragma once
// Shape of one causal self-attention call, shared by the CPU and CUDA kernels.
// q, dq: [batch, seq, heads, head_dim]; k, dk: [batch, seq, kv_heads, head_dim];
// v, dv: [batch, seq, kv_heads, v_dim()]; out, dout: [batch, seq, heads, v_dim()].
// V's heads are head_dim wide unless v_head_dim says otherwise (multi-head latent
// attention, DeepSeek-V2 §2.1: Q/K heads of nope + rope width, V heads narrower); the CUDA
// kernels take v_dim() == head_dim only.
// Grouped-query attention (Ainslie et al. 2023 "GQA", Sec. 2.2): query head h reads
// kv head h / (heads / kv_heads); kv_heads == heads is multi-head, 1 is multi-query.

#include "kernels/common/hd.hpp"

namespace twinsim::kernels {

struct AttentionShape {
  int batch = 1;
  int seq = 1;
  int heads = 1;
  int kv_heads = 1;
  int head_dim = 1;
  int v_head_dim = 0;  // 0: head_dim

  TWINSIM_HD int v_dim() const { return v_head_dim > 0 ? v_head_dim : head_dim; }
  TWINSIM_HD int group() const { return heads / kv_heads; }
  TWINSIM_HD int kv_head_of(int head) const { return head / group(); }
  TWINSIM_HD long q_row_stride() const { return static_cast<long>(heads) * head_dim; }
  TWINSIM_HD long kv_row_stride() const { return static_cast<long>(kv_heads) * head_dim; }
  TWINSIM_HD long v_row_stride() const { return static_cast<long>(kv_heads) * v_dim(); }
  TWINSIM_HD long out_row_stride() const { return static_cast<long>(heads) * v_dim(); }
  // Offset of (b, s = 0, head h) in q/out, and of (b, 0, kv head) in k/v.
  TWINSIM_HD long q_offset(int b, int h) const {
    return static_cast<long>(b) * seq * q_row_stride() + static_cast<long>(h) * head_dim;
  }
  TWINSIM_HD long kv_offset(int b, int kvh) const {
    return static_cast<long>(b) * seq * kv_row_stride() + static_cast<long>(kvh) * head_dim;
  }
  // ... of (b, 0, kv head) in v, and of (b, 0, head h) in out.
  TWINSIM_HD long v_offset(int b, int kvh) const {
    return static_cast<long>(b) * seq * v_row_stride() + static_cast<long>(kvh) * v_dim();
  }
  TWINSIM_HD long out_offset(int b, int h) const {
    return static_cast<long>(b) * seq * out_row_stride() + static_cast<long>(h) * v_dim();
  }
};

}  // namespace twinsim::kernels
