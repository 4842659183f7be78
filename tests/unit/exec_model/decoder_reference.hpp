#pragma once
// The independent reference for KV-cache decoding: the training forward (flash attention
// over the whole sequence, no cache) re-run on the growing sequence, its logits at each
// sequence's last position. Shared by the single-rank test and the TP2 MPI test.
#include <vector>

#include "exec/model/transformer.hpp"

namespace twinsim::exec::test {

// Logits [batch, local_vocab] at position len-1 of tokens [batch, len] (prefix of `all`,
// rows of `stride` tokens), from a fresh stage whose weights are the seeded initial ones.
inline std::vector<float> full_forward_last_logits(TransformerConfig c, const ModelContext& ctx,
                                                   const std::vector<int>& all, int stride, int len) {
  c.seq_len = len;
  TransformerStage stage(c);
  stage.initialize();
  MicroBatchState st;
  for (int b = 0; b < c.micro_batch; ++b)
    for (int j = 0; j < len; ++j) {
      st.tokens.push_back(all[b * stride + j]);
      st.targets.push_back(0);  // the loss is not looked at
    }
  stage.forward(ctx, Tensor(), st);
  const int vl = c.local_vocab();
  std::vector<float> out(static_cast<std::size_t>(c.micro_batch) * vl);
  for (int b = 0; b < c.micro_batch; ++b) {  // read through the backend: the logits are device memory
    const float* row = st.head.logits.data() + (static_cast<std::size_t>(b) * len + len - 1) * vl;
    ctx.device().copy_to_host(out.data() + static_cast<std::size_t>(b) * vl, row, static_cast<std::size_t>(vl) * sizeof(float));
  }
  return out;
}

// A device tensor's values on the host.
inline std::vector<float> host_values(const ModelContext& ctx, const Tensor& t) {
  std::vector<float> out(t.size());
  ctx.device().copy_to_host(out.data(), t.data(), t.bytes());
  return out;
}

inline float max_abs_diff(const float* a, const std::vector<float>& b) {
  float m = 0;
  for (std::size_t i = 0; i < b.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

}  // namespace twinsim::exec::test
