// The serving attention kernel against the training flash kernel (a prefill over an empty
// cache is causal self-attention) and against itself run token by token (decode steps
// over a growing cache give the rows of one prefill).
#include "kernels/cpu/kv_cache_attention.hpp"

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

}  // namespace
}  // namespace twinsim::kernels::testing
