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

// One (batch, head) of the forward as float rows (RowsIn / RowsOut): q [seq, head_dim] and
// out [seq, v_dim] rows q_stride and out_stride apart; k, v of its kv head.
struct HeadForward {
  const float* q;
  const float* k;
  const float* v;
  float* out;
  long q_stride, k_stride, v_stride, out_stride;
};

// FlashAttention-2 Alg. 1 for the query rows [q0, q0 + rows) of one (batch, head).
void forward_query_block(const HeadForward& f, float* lse, const AttentionShape& s, int b, int h,
                         int q0, int rows, int kv_tile) {
  float scale = 1.0f / std::sqrt(static_cast<float>(s.head_dim));
  auto qi = head_rows(f.q, f.q_stride, q0, rows, s.head_dim);
  RowMatrix acc = RowMatrix::Zero(rows, s.v_dim());
  RowMatrix scores(rows, kv_tile);
  std::vector<OnlineSoftmax> stats(rows);
  // Causal: only key blocks that start at or before the last query row contribute.
  for (int k0 = 0; k0 < q0 + rows; k0 += kv_tile) {
    int cols = std::min(kv_tile, s.seq - k0);
    auto kj = head_rows(f.k, f.k_stride, k0, cols, s.head_dim);
    auto vj = head_rows(f.v, f.v_stride, k0, cols, s.v_dim());
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
  auto oi = head_rows(f.out, f.out_stride, q0, rows, s.v_dim());
  for (int r = 0; r < rows; ++r) {
    oi.row(r) = acc.row(r) / stats[r].sum;
    lse[lse_offset(s, b, h) + q0 + r] = online_softmax_logsumexp(stats[r]);
  }
}

}  // namespace

// Heads are visited kv head by kv head (query heads h / group == kvh together, h
// ascending), so each kv head is loaded once and, in the backward, its dk and dv sums are
// finished, and rounded, before the next.
template <class T>
void flash_attention_forward(const T* q, const T* k, const T* v, T* out, float* logsumexp,
                             const AttentionShape& s, FlashTiles tiles) {
  const int vd = s.v_dim();
  long qs = s.q_row_stride(), kvs = s.kv_row_stride(), vs = s.v_row_stride(), os = s.out_row_stride();
  for (int b = 0; b < s.batch; ++b)
    for (int kvh = 0; kvh < s.kv_heads; ++kvh) {
      RowsIn<T> k_f(k + s.kv_offset(b, kvh), kvs, s.seq, s.head_dim), v_f(v + s.v_offset(b, kvh), vs, s.seq, vd);
      for (int h = kvh * s.group(); h < (kvh + 1) * s.group(); ++h) {
        RowsIn<T> q_f(q + s.q_offset(b, h), qs, s.seq, s.head_dim);
        RowsOut<T> out_f(out + s.out_offset(b, h), os, s.seq, vd, Start::any);
        HeadForward f{q_f.data(), k_f.data(), v_f.data(), out_f.data(),
                      q_f.stride(), k_f.stride(), v_f.stride(), out_f.stride()};
        for (int q0 = 0; q0 < s.seq; q0 += tiles.q)
          forward_query_block(f, logsumexp, s, b, h, q0, std::min(tiles.q, s.seq - q0), tiles.kv);
        out_f.store();
      }
    }
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
void backward_key_block(HeadGrads& g, int seq, int head_dim, int v_dim, int k0, int cols,
                        int q_tile, float scale) {
  auto kj = g.k.middleRows(k0, cols);
  auto vj = g.v.middleRows(k0, cols);
  RowMatrix dk_acc = RowMatrix::Zero(cols, head_dim);
  RowMatrix dv_acc = RowMatrix::Zero(cols, v_dim);
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

template <class T>
void flash_attention_backward(const T* q, const T* k, const T* v, const T* out,
                              const float* logsumexp, const T* dout, T* dq, T* dk, T* dv,
                              const AttentionShape& s, FlashTiles tiles) {
  float scale = 1.0f / std::sqrt(static_cast<float>(s.head_dim));
  std::vector<float> row_dot(s.seq);  // linear in seq, like the logsumexp
  const int vd = s.v_dim();
  long qs = s.q_row_stride(), kvs = s.kv_row_stride(), vs = s.v_row_stride(), os = s.out_row_stride();
  for (int b = 0; b < s.batch; ++b)
    for (int kvh = 0; kvh < s.kv_heads; ++kvh) {
      long kv = s.kv_offset(b, kvh), vo = s.v_offset(b, kvh);
      RowsIn<T> k_f(k + kv, kvs, s.seq, s.head_dim), v_f(v + vo, vs, s.seq, vd);
      RowsOut<T> dk_f(dk + kv, kvs, s.seq, s.head_dim, Start::zero);
      RowsOut<T> dv_f(dv + vo, vs, s.seq, vd, Start::zero);
      for (int h = kvh * s.group(); h < (kvh + 1) * s.group(); ++h) {
        long qo = s.q_offset(b, h), oo = s.out_offset(b, h);
        RowsIn<T> q_f(q + qo, qs, s.seq, s.head_dim), dout_f(dout + oo, os, s.seq, vd);
        RowsIn<T> out_f(out + oo, os, s.seq, vd);
        RowsOut<T> dq_f(dq + qo, qs, s.seq, s.head_dim, Start::zero);
        HeadGrads g{head_rows(q_f.data(), q_f.stride(), 0, s.seq, s.head_dim),
                    head_rows(k_f.data(), k_f.stride(), 0, s.seq, s.head_dim),
                    head_rows(v_f.data(), v_f.stride(), 0, s.seq, vd),
                    head_rows(dout_f.data(), dout_f.stride(), 0, s.seq, vd),
                    head_rows(dq_f.data(), dq_f.stride(), 0, s.seq, s.head_dim),
                    head_rows(dk_f.data(), dk_f.stride(), 0, s.seq, s.head_dim),
                    head_rows(dv_f.data(), dv_f.stride(), 0, s.seq, vd),
                    logsumexp + lse_offset(s, b, h),
                    row_dot.data()};
        // D_i = rowsum(dO_i * O_i) (FlashAttention-2, Alg. 2 line 4).
        auto oh = head_rows(out_f.data(), out_f.stride(), 0, s.seq, vd);
        for (int i = 0; i < s.seq; ++i) row_dot[i] = g.dout.row(i).dot(oh.row(i));
        for (int k0 = 0; k0 < s.seq; k0 += tiles.kv)
          backward_key_block(g, s.seq, s.head_dim, vd, k0, std::min(tiles.kv, s.seq - k0), tiles.q, scale);
        dq_f.store();
      }
      dk_f.store();
      dv_f.store();
    }
}

#define TWINSIM_FLASH_INSTANTIATE(T)                                                             \
  template void flash_attention_forward<T>(const T*, const T*, const T*, T*, float*,             \
                                           const AttentionShape&, FlashTiles);                   \
  template void flash_attention_backward<T>(const T*, const T*, const T*, const T*, const float*, \
                                            const T*, T*, T*, T*, const AttentionShape&, FlashTiles);
TWINSIM_FLASH_INSTANTIATE(float)
TWINSIM_FLASH_INSTANTIATE(bf16)
TWINSIM_FLASH_INSTANTIATE(fp16)
#undef TWINSIM_FLASH_INSTANTIATE

}  // namespace twinsim::kernels::cpu
