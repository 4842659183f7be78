#include "kernels/cpu/kv_cache_attention.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace twinsim::kernels::cpu {

void kv_cache_attention_forward(const float* q, const float* k_cache, const float* v_cache, float* out,
                                const KvCacheAttentionShape& s) {
  const int hd = s.head_dim, vd = s.v_dim(), group = s.heads / s.kv_heads;
  const std::size_t qw = static_cast<std::size_t>(s.heads) * hd, kvw = static_cast<std::size_t>(s.kv_heads) * hd;
  const std::size_t ow = static_cast<std::size_t>(s.heads) * vd;
  const std::size_t vw = s.v_row_stride > 0 ? static_cast<std::size_t>(s.v_row_stride) : static_cast<std::size_t>(s.kv_heads) * vd;
  const float scale = s.scale > 0 ? s.scale : 1.0f / std::sqrt(static_cast<float>(hd));
  std::vector<float> score(static_cast<std::size_t>(s.cached + s.new_tokens));
  for (int b = 0; b < s.batch; ++b)
    for (int j = 0; j < s.new_tokens; ++j) {
      const int pos = s.cached + j;
      for (int head = 0; head < s.heads; ++head) {
        const float* qv = q + (static_cast<std::size_t>(b) * s.new_tokens + j) * qw + static_cast<std::size_t>(head) * hd;
        const int kv_head = head / group;
        float top = -INFINITY;
        for (int t = 0; t <= pos; ++t) {
          const float* kv = k_cache + (static_cast<std::size_t>(b) * s.cache_rows + t) * kvw + static_cast<std::size_t>(kv_head) * hd;
          float dot = 0;
          for (int d = 0; d < hd; ++d) dot += qv[d] * kv[d];
          score[t] = dot * scale;
          top = std::max(top, score[t]);
        }
        float sum = 0;
        for (int t = 0; t <= pos; ++t) sum += score[t] = std::exp(score[t] - top);
        float* o = out + (static_cast<std::size_t>(b) * s.new_tokens + j) * ow + static_cast<std::size_t>(head) * vd;
        std::fill(o, o + vd, 0.0f);
        for (int t = 0; t <= pos; ++t) {
          const float* vv = v_cache + (static_cast<std::size_t>(b) * s.cache_rows + t) * vw + static_cast<std::size_t>(kv_head) * vd;
          const float p = score[t] / sum;
          for (int d = 0; d < vd; ++d) o[d] += p * vv[d];
        }
      }
    }
}

}  // namespace twinsim::kernels::cpu
