#include "kernels/cpu/kv_cache_attention.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace twinsim::kernels::cpu {

void kv_cache_attention_forward(const float* q, const float* k_cache, const float* v_cache, float* out,
                                const KvCacheAttentionShape& s) {
  const int hd = s.head_dim, group = s.heads / s.kv_heads;
  const std::size_t qw = static_cast<std::size_t>(s.heads) * hd, kvw = static_cast<std::size_t>(s.kv_heads) * hd;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  std::vector<float> score(static_cast<std::size_t>(s.cached + s.new_tokens));
  for (int b = 0; b < s.batch; ++b)
    for (int j = 0; j < s.new_tokens; ++j) {
      const int pos = s.cached + j;
      for (int head = 0; head < s.heads; ++head) {
        const float* qv = q + (static_cast<std::size_t>(b) * s.new_tokens + j) * qw + static_cast<std::size_t>(head) * hd;
        const std::size_t kv_off = static_cast<std::size_t>(head / group) * hd;
        float top = -INFINITY;
        for (int t = 0; t <= pos; ++t) {
          const float* kv = k_cache + (static_cast<std::size_t>(b) * s.cache_rows + t) * kvw + kv_off;
          float dot = 0;
          for (int d = 0; d < hd; ++d) dot += qv[d] * kv[d];
          score[t] = dot * scale;
          top = std::max(top, score[t]);
        }
        float sum = 0;
        for (int t = 0; t <= pos; ++t) sum += score[t] = std::exp(score[t] - top);
        float* o = out + (static_cast<std::size_t>(b) * s.new_tokens + j) * qw + static_cast<std::size_t>(head) * hd;
        std::fill(o, o + hd, 0.0f);
        for (int t = 0; t <= pos; ++t) {
          const float* vv = v_cache + (static_cast<std::size_t>(b) * s.cache_rows + t) * kvw + kv_off;
          const float p = score[t] / sum;
          for (int d = 0; d < hd; ++d) o[d] += p * vv[d];
        }
      }
    }
}

}  // namespace twinsim::kernels::cpu
