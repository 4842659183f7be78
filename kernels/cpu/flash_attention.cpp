#include "kernels/cpu/flash_attention.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/common/softmax_math.hpp"
#include "kernels/cpu/head_view.hpp"

namespace twinsim::kernels::cpu {
namespace {

// Scores of one block, scaled, with the causal mask (key j after query i) set to -inf.
template <typename QBlock, typename KBlock>
void block_scores(const QBlock& qi, const KBlock& kj, int q0, int k0, float scale,
                  RowMatrix& scores) {
  scores.noalias() = scale * (qi * kj.transpose());
  for (int r = 0; r < scores.rows(); ++r)
    for (int c = std::max(0, q0 + r - k0 + 1); c < scores.cols(); ++c) scores(r, c) = -INFINITY;
}

long lse_offset(const AttentionShape& s, int b, int h) {
  return (static_cast<long>(b) * s.heads + h) * s.seq;
}

// FlashAttention-2 Alg. 1 for the query rows [q0, q0 + rows) of one (batch, head).
void forward_query_block(const float* q, const float* k, const float* v, float* out, float* lse,
                         const AttentionShape& s, int b, int h, int q0, int rows, int kv_tile) {
  float scale = 1.0f / std::sqrt(static_cast<float>(s.head_dim));
  long kv = s.kv_offset(b, s.kv_head_of(h));
  auto qi = head_rows(q + s.q_offset(b, h), s.q_row_stride(), q0, rows, s.head_dim);
  RowMatrix acc = RowMatrix::Zero(rows, s.head_dim);
  RowMatrix scores(rows, kv_tile);
  std::vector<OnlineSoftmax> stats(rows);
  // Causal: only key blocks that start at or before the last query row contribute.
  for (int k0 = 0; k0 < q0 + rows; k0 += kv_tile) {
    int cols = std::min(kv_tile, s.seq - k0);
    auto kj = head_rows(k + kv, s.kv_row_stride(), k0, cols, s.head_dim);
    auto vj = head_rows(v + kv, s.kv_row_stride(), k0, cols, s.head_dim);
    scores.resize(rows, cols);
    block_scores(qi, kj, q0, k0, scale, scores);
    for (int r = 0; r < rows; ++r) {
      float new_max = std::max(stats[r].max, scores.row(r).maxCoeff());
      if (new_max == -INFINITY) {  // nothing unmasked seen yet: contributes nothing
        scores.row(r).setZero();
        continue;
      }
      float rescale = online_softmax_rescale(stats[r].max, new_max);
      scores.row(r) = (scores.row(r).array() - new_max).exp();
      stats[r].sum = stats[r].sum * rescale + scores.row(r).sum();
      stats[r].max = new_max;
      acc.row(r) *= rescale;
    }
    acc.noalias() += scores * vj;
  }
  auto oi = head_rows(out + s.q_offset(b, h), s.q_row_stride(), q0, rows, s.head_dim);
  for (int r = 0; r < rows; ++r) {
    oi.row(r) = acc.row(r) / stats[r].sum;
    lse[lse_offset(s, b, h) + q0 + r] = online_softmax_logsumexp(stats[r]);
  }
}

}  // namespace

void flash_attention_forward(const float* q, const float* k, const float* v, float* out,
                             float* logsumexp, const AttentionShape& s, FlashTiles tiles) {
  for (int b = 0; b < s.batch; ++b)
    for (int h = 0; h < s.heads; ++h)
      for (int q0 = 0; q0 < s.seq; q0 += tiles.q)
        forward_query_block(q, k, v, out, logsumexp, s, b, h, q0, std::min(tiles.q, s.seq - q0),
                            tiles.kv);
}

namespace {

// Everything one (batch, head) of the backward reads, and where it writes.
struct HeadGrads {
  ConstHeadView q, k, v, dout;
  HeadView dq, dk, dv;
  const float* lse;        // [seq] logsumexp of this head's rows
  const float* row_dot;    // [seq] D_i = rowsum(dO_i * O_i)
};

// FlashAttention-2 Alg. 2 for the key rows [k0, k0 + cols): loop over the query blocks
// that see them, recomputing P = exp(S - lse) block by block.
void backward_key_block(HeadGrads& g, int seq, int head_dim, int k0, int cols,
                        int q_tile, float scale) {
  auto kj = g.k.middleRows(k0, cols);
  auto vj = g.v.middleRows(k0, cols);
  RowMatrix dk_acc = RowMatrix::Zero(cols, head_dim);
  RowMatrix dv_acc = RowMatrix::Zero(cols, head_dim);
  RowMatrix p, dp;
  // Causal: query rows before k0 never see these keys.
  for (int q0 = (k0 / q_tile) * q_tile; q0 < seq; q0 += q_tile) {
    int rows = std::min(q_tile, seq - q0);
    auto qi = g.q.middleRows(q0, rows);
    auto doi = g.dout.middleRows(q0, rows);
    p.resize(rows, cols);
    block_scores(qi, kj, q0, k0, scale, p);
    for (int r = 0; r < rows; ++r) p.row(r) = (p.row(r).array() - g.lse[q0 + r]).exp();
    dv_acc.noalias() += p.transpose() * doi;
    dp.noalias() = doi * vj.transpose();
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c)
        dp(r, c) = softmax_backward_element(p(r, c), dp(r, c), g.row_dot[q0 + r]);
    g.dq.middleRows(q0, rows).noalias() += scale * (dp * kj);
    dk_acc.noalias() += scale * (dp.transpose() * qi);
  }
  g.dk.middleRows(k0, cols) += dk_acc;
  g.dv.middleRows(k0, cols) += dv_acc;
}

}  // namespace

void flash_attention_backward(const float* q, const float* k, const float* v, const float* out,
                              const float* logsumexp, const float* dout, float* dq, float* dk,
                              float* dv, const AttentionShape& s, FlashTiles tiles) {
  float scale = 1.0f / std::sqrt(static_cast<float>(s.head_dim));
  long q_elems = static_cast<long>(s.batch) * s.seq * s.q_row_stride();
  long kv_elems = static_cast<long>(s.batch) * s.seq * s.kv_row_stride();
  std::fill(dq, dq + q_elems, 0.0f);
  std::fill(dk, dk + kv_elems, 0.0f);
  std::fill(dv, dv + kv_elems, 0.0f);
  std::vector<float> row_dot(s.seq);  // linear in seq, like the logsumexp
  long qs = s.q_row_stride(), kvs = s.kv_row_stride();
  for (int b = 0; b < s.batch; ++b)
    for (int h = 0; h < s.heads; ++h) {
      long qo = s.q_offset(b, h), kv = s.kv_offset(b, s.kv_head_of(h));
      HeadGrads g{head_rows(q + qo, qs, 0, s.seq, s.head_dim),
                  head_rows(k + kv, kvs, 0, s.seq, s.head_dim),
                  head_rows(v + kv, kvs, 0, s.seq, s.head_dim),
                  head_rows(dout + qo, qs, 0, s.seq, s.head_dim),
                  head_rows(dq + qo, qs, 0, s.seq, s.head_dim),
                  head_rows(dk + kv, kvs, 0, s.seq, s.head_dim),
                  head_rows(dv + kv, kvs, 0, s.seq, s.head_dim),
                  logsumexp + lse_offset(s, b, h),
                  row_dot.data()};
      // D_i = rowsum(dO_i * O_i) (FlashAttention-2, Alg. 2 line 4).
      auto oh = head_rows(out + qo, qs, 0, s.seq, s.head_dim);
      for (int i = 0; i < s.seq; ++i) row_dot[i] = g.dout.row(i).dot(oh.row(i));
      for (int k0 = 0; k0 < s.seq; k0 += tiles.kv)
        backward_key_block(g, s.seq, s.head_dim, k0, std::min(tiles.kv, s.seq - k0), tiles.q, scale);
    }
}

}  // namespace twinsim::kernels::cpu
