#include "kernels/cpu/attention.hpp"

#include <cmath>

#include "kernels/common/softmax_math.hpp"
#include "kernels/cpu/head_view.hpp"

namespace twinsim::kernels::cpu {
namespace {

// Offset of the [seq, seq] block of probs for (b, h).
long probs_offset(const AttentionShape& s, int b, int h) {
  return (static_cast<long>(b) * s.heads + h) * s.seq * s.seq;
}

// Row-wise softmax of the lower triangle (causal mask), zeros above the diagonal.
void causal_softmax_rows(Eigen::Map<RowMatrix>& p) {
  for (int i = 0; i < p.rows(); ++i) {
    float row_max = p.row(i).head(i + 1).maxCoeff();
    float sum = 0.0f;
    for (int j = 0; j <= i; ++j) sum += (p(i, j) = std::exp(p(i, j) - row_max));
    p.row(i).head(i + 1) /= sum;
    p.row(i).tail(p.cols() - i - 1).setZero();
  }
}

}  // namespace

// Heads are visited kv head by kv head (query heads h / group == kvh together, in the
// order h ascending), so each kv head is loaded once and, in the backward, its dk and dv
// sums are finished, and rounded, before the next.
template <class T>
void attention_forward(const T* q, const T* k, const T* v, T* out, T* probs,
                       const AttentionShape& s) {
  // Scaled dot-product attention (Vaswani et al. 2017, Eq. 1).
  float scale = 1.0f / std::sqrt(static_cast<float>(s.head_dim));
  const int vd = s.v_dim();
  long qs = s.q_row_stride(), kvs = s.kv_row_stride(), vs = s.v_row_stride(), os = s.out_row_stride();
  for (int b = 0; b < s.batch; ++b)
    for (int kvh = 0; kvh < s.kv_heads; ++kvh) {
      RowsIn<T> k_f(k + s.kv_offset(b, kvh), kvs, s.seq, s.head_dim), v_f(v + s.v_offset(b, kvh), vs, s.seq, vd);
      auto kh = head_rows(k_f.data(), k_f.stride(), 0, s.seq, s.head_dim);
      auto vh = head_rows(v_f.data(), v_f.stride(), 0, s.seq, vd);
      for (int h = kvh * s.group(); h < (kvh + 1) * s.group(); ++h) {
        RowsIn<T> q_f(q + s.q_offset(b, h), qs, s.seq, s.head_dim);
        RowsOut<T> out_f(out + s.out_offset(b, h), os, s.seq, vd, Start::any);
        RowsOut<T> p_f(probs + probs_offset(s, b, h), s.seq, s.seq, s.seq, Start::any);
        auto qh = head_rows(q_f.data(), q_f.stride(), 0, s.seq, s.head_dim);
        auto oh = head_rows(out_f.data(), out_f.stride(), 0, s.seq, vd);
        Eigen::Map<RowMatrix> p(p_f.data(), s.seq, s.seq);
        p.noalias() = scale * (qh * kh.transpose());
        causal_softmax_rows(p);
        oh.noalias() = p * vh;
        out_f.store();
        p_f.store();
      }
    }
}

template <class T>
void attention_backward(const T* q, const T* k, const T* v, const T* probs, const T* dout, T* dq,
                        T* dk, T* dv, const AttentionShape& s) {
  float scale = 1.0f / std::sqrt(static_cast<float>(s.head_dim));
  const int vd = s.v_dim();
  long qs = s.q_row_stride(), kvs = s.kv_row_stride(), vs = s.v_row_stride(), os = s.out_row_stride();
  RowMatrix dp(s.seq, s.seq);
  for (int b = 0; b < s.batch; ++b)
    for (int kvh = 0; kvh < s.kv_heads; ++kvh) {
      long kv = s.kv_offset(b, kvh), vo = s.v_offset(b, kvh);
      RowsIn<T> k_f(k + kv, kvs, s.seq, s.head_dim), v_f(v + vo, vs, s.seq, vd);
      RowsOut<T> dk_f(dk + kv, kvs, s.seq, s.head_dim, Start::zero);
      RowsOut<T> dv_f(dv + vo, vs, s.seq, vd, Start::zero);
      auto kh = head_rows(k_f.data(), k_f.stride(), 0, s.seq, s.head_dim);
      auto vh = head_rows(v_f.data(), v_f.stride(), 0, s.seq, vd);
      auto dkh = head_rows(dk_f.data(), dk_f.stride(), 0, s.seq, s.head_dim);
      auto dvh = head_rows(dv_f.data(), dv_f.stride(), 0, s.seq, vd);
      for (int h = kvh * s.group(); h < (kvh + 1) * s.group(); ++h) {
        long qo = s.q_offset(b, h);
        RowsIn<T> q_f(q + qo, qs, s.seq, s.head_dim), dout_f(dout + s.out_offset(b, h), os, s.seq, vd);
        RowsIn<T> p_f(probs + probs_offset(s, b, h), s.seq, s.seq, s.seq);
        RowsOut<T> dq_f(dq + qo, qs, s.seq, s.head_dim, Start::any);
        auto qh = head_rows(q_f.data(), q_f.stride(), 0, s.seq, s.head_dim);
        auto doh = head_rows(dout_f.data(), dout_f.stride(), 0, s.seq, vd);
        auto dqh = head_rows(dq_f.data(), dq_f.stride(), 0, s.seq, s.head_dim);
        Eigen::Map<const RowMatrix> p(p_f.data(), s.seq, s.seq);
        dvh.noalias() += p.transpose() * doh;
        dp.noalias() = doh * vh.transpose();
        // dS = P * (dP - rowsum(P * dP)): softmax backward (FlashAttention-2, Alg. 2 line 11).
        for (int i = 0; i < s.seq; ++i) {
          float row_dot = p.row(i).dot(dp.row(i));
          for (int j = 0; j < s.seq; ++j) dp(i, j) = softmax_backward_element(p(i, j), dp(i, j), row_dot);
        }
        dqh.noalias() = scale * (dp * kh);
        dkh.noalias() += scale * (dp.transpose() * qh);
        dq_f.store();
      }
      dk_f.store();
      dv_f.store();
    }
}

#define TWINSIM_ATTENTION_INSTANTIATE(T)                                                        \
  template void attention_forward<T>(const T*, const T*, const T*, T*, T*, const AttentionShape&); \
  template void attention_backward<T>(const T*, const T*, const T*, const T*, const T*, T*, T*, T*, \
                                      const AttentionShape&);
TWINSIM_ATTENTION_INSTANTIATE(float)
TWINSIM_ATTENTION_INSTANTIATE(bf16)
TWINSIM_ATTENTION_INSTANTIATE(fp16)
#undef TWINSIM_ATTENTION_INSTANTIATE

}  // namespace twinsim::kernels::cpu
