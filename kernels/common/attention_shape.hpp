#pragma once
// Shape of one causal self-attention call, shared by the CPU and CUDA kernels.
// q, dq, out, dout: [batch, seq, heads, head_dim]; k, v, dk, dv: [batch, seq, kv_heads, head_dim].
// Grouped-query attention (Ainslie et al. 2023 "GQA", Sec. 2.2): query head h reads
// kv head h / (heads / kv_heads); kv_heads == heads is multi-head, 1 is multi-query.

namespace twinsim::kernels {

struct AttentionShape {
  int batch = 1;
  int seq = 1;
  int heads = 1;
  int kv_heads = 1;
  int head_dim = 1;

  int group() const { return heads / kv_heads; }
  int kv_head_of(int head) const { return head / group(); }
  long q_row_stride() const { return static_cast<long>(heads) * head_dim; }
  long kv_row_stride() const { return static_cast<long>(kv_heads) * head_dim; }
  // Offset of (b, s = 0, head h) in q/out, and of (b, 0, kv head) in k/v.
  long q_offset(int b, int h) const {
    return static_cast<long>(b) * seq * q_row_stride() + static_cast<long>(h) * head_dim;
  }
  long kv_offset(int b, int kvh) const {
    return static_cast<long>(b) * seq * kv_row_stride() + static_cast<long>(kvh) * head_dim;
  }
};

}  // namespace twinsim::kernels
