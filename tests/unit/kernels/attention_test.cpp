#include "kernels/cpu/attention.hpp"

#include <cmath>

#include "kernels/cpu/flash_attention.hpp"
#include "tests/unit/kernels/kernel_test_util.hpp"

namespace twinsim::kernels::testing {
namespace {

struct AttentionData {
  AttentionShape shape;
  std::vector<float> q, k, v, dout;
  explicit AttentionData(AttentionShape s, unsigned seed) : shape(s) {
    long qn = long(s.batch) * s.seq * s.heads * s.head_dim;
    long kvn = long(s.batch) * s.seq * s.kv_heads * s.head_dim;
    q = random_vector(qn, seed, -2, 2);
    k = random_vector(kvn, seed + 1, -2, 2);
    v = random_vector(long(s.batch) * s.seq * s.kv_heads * s.v_dim(), seed + 2);
    dout = random_vector(long(s.batch) * s.seq * s.heads * s.v_dim(), seed + 3);
  }
};

// softmax(q k^T / sqrt(d) + causal mask) v per (batch, head), query head h reading kv head
// h / (heads / kv_heads) (Vaswani et al. 2017 Eq. 1; Ainslie et al. 2023 Sec. 2.2), V heads
// v_dim wide (MLA's are narrower than Q/K's), in double. Also returns each row's logsumexp
// of the scaled scores.
std::vector<double> naive_attention(const AttentionShape& s, const std::vector<double>& q,
                                    const std::vector<double>& k, const std::vector<double>& v,
                                    std::vector<double>* lse = nullptr) {
  int S = s.seq, H = s.heads, KV = s.kv_heads, D = s.head_dim, V = s.v_dim();
  std::vector<double> out(long(s.batch) * S * H * V, 0.0);
  if (lse) lse->assign(long(s.batch) * H * S, 0.0);
  for (int b = 0; b < s.batch; ++b)
    for (int h = 0; h < H; ++h) {
      int kvh = h / (H / KV);
      for (int i = 0; i < S; ++i) {
        std::vector<double> score(i + 1);
        double mx = -1e300;
        for (int j = 0; j <= i; ++j) {
          double dot = 0;
          for (int d = 0; d < D; ++d)
            dot += q[((b * S + i) * H + h) * D + d] * k[((b * S + j) * KV + kvh) * D + d];
          score[j] = dot / std::sqrt(double(D));
          mx = std::max(mx, score[j]);
        }
        double sum = 0;
        for (double& x : score) sum += (x = std::exp(x - mx));
        if (lse) (*lse)[(b * H + h) * S + i] = mx + std::log(sum);
        for (int j = 0; j <= i; ++j)
          for (int d = 0; d < V; ++d)
            out[((b * S + i) * H + h) * V + d] += score[j] / sum * v[((b * S + j) * KV + kvh) * V + d];
      }
    }
  return out;
}

std::vector<float> probs_buffer(const AttentionShape& s) {
  return std::vector<float>(long(s.batch) * s.heads * s.seq * s.seq);
}

TEST(Attention, PlainForwardMatchesNaive) {
  AttentionData d({.batch = 2, .seq = 7, .heads = 4, .kv_heads = 2, .head_dim = 8}, 1);
  std::vector<float> out(d.dout.size()), probs = probs_buffer(d.shape);
  cpu::attention_forward(d.q.data(), d.k.data(), d.v.data(), out.data(), probs.data(), d.shape);
  expect_all_near(out, naive_attention(d.shape, to_double(d.q), to_double(d.k), to_double(d.v)),
                  1e-5, 1e-4, "out");
  // Causal: the first query sees only the first key, so its probability row is (1, 0, ...).
  EXPECT_FLOAT_EQ(probs[0], 1.0f);
  EXPECT_EQ(probs[1], 0.0f);
}

TEST(Attention, PlainBackwardMatchesFiniteDifferences) {
  for (int v_head_dim : {0, 3}) {  // V as wide as Q/K, and narrower (MLA)
  AttentionData d({.batch = 1, .seq = 5, .heads = 4, .kv_heads = 2, .head_dim = 4, .v_head_dim = v_head_dim}, 5);
  const auto& s = d.shape;
  std::vector<float> out(d.dout.size()), probs = probs_buffer(s);
  std::vector<float> dq(d.q.size()), dk(d.k.size()), dv(d.v.size());
  cpu::attention_forward(d.q.data(), d.k.data(), d.v.data(), out.data(), probs.data(), s);
  cpu::attention_backward(d.q.data(), d.k.data(), d.v.data(), probs.data(), d.dout.data(),
                          dq.data(), dk.data(), dv.data(), s);
  auto q = to_double(d.q), k = to_double(d.k), v = to_double(d.v);
  auto lq = [&](const std::vector<double>& x) { return weighted_sum(naive_attention(s, x, k, v), d.dout); };
  auto lk = [&](const std::vector<double>& x) { return weighted_sum(naive_attention(s, q, x, v), d.dout); };
  auto lv = [&](const std::vector<double>& x) { return weighted_sum(naive_attention(s, q, k, x), d.dout); };
  expect_all_near(dq, numeric_gradient(lq, q), 1e-4, 1e-3, "dq");
  expect_all_near(dk, numeric_gradient(lk, k), 1e-4, 1e-3, "dk");
  expect_all_near(dv, numeric_gradient(lv, v), 1e-4, 1e-3, "dv");
  }
}

struct FlashCase {
  AttentionShape shape;
  cpu::FlashTiles tiles;
};

class FlashVsPlain : public ::testing::TestWithParam<FlashCase> {};

TEST_P(FlashVsPlain, ForwardAndBackwardAgree) {
  auto [shape, tiles] = GetParam();
  AttentionData d(shape, 11);
  std::vector<float> out(d.dout.size()), probs = probs_buffer(shape);
  std::vector<float> dq(d.q.size()), dk(d.k.size()), dv(d.v.size());
  cpu::attention_forward(d.q.data(), d.k.data(), d.v.data(), out.data(), probs.data(), shape);
  cpu::attention_backward(d.q.data(), d.k.data(), d.v.data(), probs.data(), d.dout.data(),
                          dq.data(), dk.data(), dv.data(), shape);

  std::vector<float> f_out(d.dout.size()), lse(long(shape.batch) * shape.heads * shape.seq);
  expect_all_near(out, naive_attention(shape, to_double(d.q), to_double(d.k), to_double(d.v)), 1e-5, 1e-4, "plain out");
  std::vector<float> f_dq(d.q.size()), f_dk(d.k.size()), f_dv(d.v.size());
  cpu::flash_attention_forward(d.q.data(), d.k.data(), d.v.data(), f_out.data(), lse.data(),
                               shape, tiles);
  cpu::flash_attention_backward(d.q.data(), d.k.data(), d.v.data(), f_out.data(), lse.data(),
                                d.dout.data(), f_dq.data(), f_dk.data(), f_dv.data(), shape, tiles);
  expect_all_near(f_out, out, 1e-5, 1e-4, "out");
  expect_all_near(f_dq, dq, 1e-4, 1e-3, "dq");
  expect_all_near(f_dk, dk, 1e-4, 1e-3, "dk");
  expect_all_near(f_dv, dv, 1e-4, 1e-3, "dv");

  std::vector<double> expected_lse;
  naive_attention(shape, to_double(d.q), to_double(d.k), to_double(d.v), &expected_lse);
  expect_all_near(lse, expected_lse, 1e-5, 1e-5, "logsumexp");
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, FlashVsPlain,
    ::testing::Values(
        // seq 37 is not a multiple of either tile; GQA with 2 query heads per kv head.
        FlashCase{{.batch = 2, .seq = 37, .heads = 4, .kv_heads = 2, .head_dim = 16}, {16, 8}},
        // q tile smaller than kv tile, so a key block starts inside a query block.
        FlashCase{{.batch = 1, .seq = 29, .heads = 2, .kv_heads = 2, .head_dim = 8}, {4, 16}},
        // multi-query (one kv head), exact multiple of the tiles.
        FlashCase{{.batch = 1, .seq = 64, .heads = 4, .kv_heads = 1, .head_dim = 8}, {16, 16}},
        // default tiles larger than seq: one block.
        FlashCase{{.batch = 2, .seq = 10, .heads = 3, .kv_heads = 3, .head_dim = 32}, {}},
        // a single token.
        FlashCase{{.batch = 1, .seq = 1, .heads = 2, .kv_heads = 1, .head_dim = 4}, {8, 8}},
        // MLA's shape: V heads narrower than Q/K's (nope 8 + rope 4 against V 6), one kv
        // head per query head
        FlashCase{{.batch = 2, .seq = 21, .heads = 3, .kv_heads = 3, .head_dim = 12, .v_head_dim = 6}, {8, 16}}));

}  // namespace
}  // namespace twinsim::kernels::testing
