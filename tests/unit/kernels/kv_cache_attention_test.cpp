// The serving attention kernel against the training flash kernel (a prefill over an empty
// cache is causal self-attention) and against itself run token by token (decode steps
// over a growing cache give the rows of one prefill).
#include "kernels/cpu/kv_cache_attention.hpp"

#include <cmath>

#include "kernels/common/attention_shape.hpp"
#include "kernels/cpu/flash_attention.hpp"
#include "tests/unit/kernels/kernel_test_util.hpp"

namespace twinsim::kernels::testing {
namespace {

// q [batch, seq, heads*d]; k, v [batch, seq, kv_heads*d] laid out as a cache of `rows`.
struct Case {
  int batch = 2, seq = 9, heads = 4, kv_heads = 2, head_dim = 8, rows = 12;
  std::vector<float> q, k_cache, v_cache;
  Case() {
    q = random_vector(long(batch) * seq * heads * head_dim, 21);
    k_cache = random_vector(long(batch) * rows * kv_heads * head_dim, 22);
    v_cache = random_vector(long(batch) * rows * kv_heads * head_dim, 23);
  }
  cpu::KvCacheAttentionShape shape(int new_tokens, int cached) const {
    return {batch, new_tokens, cached, rows, heads, kv_heads, head_dim};
  }
};

TEST(KvCacheAttention, PrefillOverAnEmptyCacheIsCausalFlashAttention) {
  const Case c;
  std::vector<float> out(c.q.size());
  cpu::kv_cache_attention_forward(c.q.data(), c.k_cache.data(), c.v_cache.data(), out.data(), c.shape(c.seq, 0));
  // the same K/V without the cache's spare rows, as the training kernel takes them
  const long w = long(c.kv_heads) * c.head_dim;
  std::vector<float> k, v;
  for (int b = 0; b < c.batch; ++b) {
    const long from = long(b) * c.rows * w;
    k.insert(k.end(), c.k_cache.begin() + from, c.k_cache.begin() + from + long(c.seq) * w);
    v.insert(v.end(), c.v_cache.begin() + from, c.v_cache.begin() + from + long(c.seq) * w);
  }
  AttentionShape s;
  s.batch = c.batch, s.seq = c.seq, s.heads = c.heads, s.kv_heads = c.kv_heads, s.head_dim = c.head_dim;
  std::vector<float> flash(c.q.size()), lse(long(c.batch) * c.heads * c.seq);
  cpu::flash_attention_forward(c.q.data(), k.data(), v.data(), flash.data(), lse.data(), s);
  expect_all_near(out, flash, 1e-6, 1e-5, "out");
}

TEST(KvCacheAttention, DecodeStepsGiveThePrefillRows) {
  const Case c;
  std::vector<float> prefill(c.q.size());
  cpu::kv_cache_attention_forward(c.q.data(), c.k_cache.data(), c.v_cache.data(), prefill.data(), c.shape(c.seq, 0));
  const long qw = long(c.heads) * c.head_dim;
  for (int j = 0; j < c.seq; ++j) {  // token j alone, after j cached ones
    std::vector<float> q1, out1(long(c.batch) * qw);
    for (int b = 0; b < c.batch; ++b) {
      const long row = (long(b) * c.seq + j) * qw;
      q1.insert(q1.end(), c.q.begin() + row, c.q.begin() + row + qw);
    }
    cpu::kv_cache_attention_forward(q1.data(), c.k_cache.data(), c.v_cache.data(), out1.data(), c.shape(1, j));
    for (int b = 0; b < c.batch; ++b)
      for (long i = 0; i < qw; ++i)
        ASSERT_EQ(out1[b * qw + i], prefill[(long(b) * c.seq + j) * qw + i]) << "token " << j << " seq " << b;
  }
}

// DeepSeek-V2 §2.1.2: with W_UK absorbed into the query and W_UV applied after, attending
// over the cached latent [c | k_rope] as one shared head gives what the per-head K and V
// rebuilt from the latent give (the scores keep 1/sqrt(nope + rope)).
TEST(KvCacheAttention, AbsorbedLatentAttentionEqualsRebuiltKeysAndValues) {
  const int batch = 2, n = 3, cached = 4, rows = 8, heads = 3, nope = 4, rope = 2, kvl = 5, vd = 3;
  const int len = cached + n, lat = kvl + rope;
  const auto c = random_vector(long(batch) * rows * lat, 31);  // cache rows [c | k_rope]
  const auto w_uk = random_vector(long(heads) * nope * kvl, 32), w_uv = random_vector(long(heads) * vd * kvl, 33);
  const auto q = random_vector(long(batch) * n * heads * (nope + rope), 34);
  auto at = [](const std::vector<float>& m, long i) { return m[i]; };
  // rebuilt: K [batch, rows, heads, nope + rope], V [batch, rows, heads, vd]
  std::vector<float> k(long(batch) * rows * heads * (nope + rope)), v(long(batch) * rows * heads * vd);
  for (int b = 0; b < batch; ++b)
    for (int t = 0; t < len; ++t)
      for (int h = 0; h < heads; ++h) {
        const long row = long(b) * rows + t;
        for (int d = 0; d < nope; ++d) {
          float sum = 0;
          for (int j = 0; j < kvl; ++j) sum += at(c, row * lat + j) * at(w_uk, (long(h) * nope + d) * kvl + j);
          k[(row * heads + h) * (nope + rope) + d] = sum;
        }
        for (int d = 0; d < rope; ++d) k[(row * heads + h) * (nope + rope) + nope + d] = at(c, row * lat + kvl + d);
        for (int d = 0; d < vd; ++d) {
          float sum = 0;
          for (int j = 0; j < kvl; ++j) sum += at(c, row * lat + j) * at(w_uv, (long(h) * vd + d) * kvl + j);
          v[(row * heads + h) * vd + d] = sum;
        }
      }
  cpu::KvCacheAttentionShape full{batch, n, cached, rows, heads, heads, nope + rope};
  full.v_head_dim = vd;
  std::vector<float> expected(long(batch) * n * heads * vd);
  cpu::kv_cache_attention_forward(q.data(), k.data(), v.data(), expected.data(), full);
  // absorbed: q_abs = [q_nope W_UK | q_rope] per head, one shared latent head
  std::vector<float> q_abs(long(batch) * n * heads * lat);
  for (long r = 0; r < long(batch) * n; ++r)
    for (int h = 0; h < heads; ++h) {
      const float* qh = q.data() + (r * heads + h) * (nope + rope);
      float* out = q_abs.data() + (r * heads + h) * lat;
      for (int j = 0; j < kvl; ++j) {
        float sum = 0;
        for (int d = 0; d < nope; ++d) sum += qh[d] * at(w_uk, (long(h) * nope + d) * kvl + j);
        out[j] = sum;
      }
      for (int d = 0; d < rope; ++d) out[kvl + d] = qh[nope + d];
    }
  cpu::KvCacheAttentionShape absorbed{batch, n, cached, rows, heads, 1, lat};
  absorbed.v_head_dim = kvl;
  absorbed.v_row_stride = lat;
  absorbed.scale = 1.0f / std::sqrt(float(nope + rope));
  std::vector<float> latent_out(long(batch) * n * heads * kvl), got(expected.size());
  cpu::kv_cache_attention_forward(q_abs.data(), c.data(), c.data(), latent_out.data(), absorbed);
  for (long r = 0; r < long(batch) * n; ++r)
    for (int h = 0; h < heads; ++h)
      for (int d = 0; d < vd; ++d) {
        float sum = 0;
        for (int j = 0; j < kvl; ++j) sum += latent_out[(r * heads + h) * kvl + j] * at(w_uv, (long(h) * vd + d) * kvl + j);
        got[(r * heads + h) * vd + d] = sum;
      }
  expect_all_near(got, std::vector<double>(expected.begin(), expected.end()), 1e-5, 1e-4, "out");
}

}  // namespace
}  // namespace twinsim::kernels::testing
