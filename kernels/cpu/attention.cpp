#include "kernels/cpu/attention.hpp"

#include <cmath>
#include <type_traits>

#include "kernels/common/softmax_math.hpp"
#include "kernels/cpu/head_view.hpp"

namespace twinsim::kernels::cpu {
namespace {

// The [seq, seq] block of probs for (b, h); Float is float or const float.
template <typename Float>
auto probs_of(Float* probs, const AttentionShape& s, int b, int h) {
  using Matrix = std::conditional_t<std::is_const_v<Float>, const RowMatrix, RowMatrix>;
  long per_head = static_cast<long>(s.seq) * s.seq;
  return Eigen::Map<Matrix>(probs + (static_cast<long>(b) * s.heads + h) * per_head, s.seq, s.seq);
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

void attention_forward(const float* q, const float* k, const float* v, float* out, float* probs,
                       const AttentionShape& s) {
  // Scaled dot-product attention (Vaswani et al. 2017, Eq. 1).
  float scale = 1.0f / std::sqrt(static_cast<float>(s.head_dim));
  for (int b = 0; b < s.batch; ++b)
    for (int h = 0; h < s.heads; ++h) {
      long kv = s.kv_offset(b, s.kv_head_of(h));
      auto qh = head_rows(q + s.q_offset(b, h), s.q_row_stride(), 0, s.seq, s.head_dim);
      auto kh = head_rows(k + kv, s.kv_row_stride(), 0, s.seq, s.head_dim);
      auto vh = head_rows(v + kv, s.kv_row_stride(), 0, s.seq, s.head_dim);
      auto oh = head_rows(out + s.q_offset(b, h), s.q_row_stride(), 0, s.seq, s.head_dim);
      auto p = probs_of(probs, s, b, h);
      p.noalias() = scale * (qh * kh.transpose());
      causal_softmax_rows(p);
      oh.noalias() = p * vh;
    }
}

void attention_backward(const float* q, const float* k, const float* v, const float* probs,
                        const float* dout, float* dq, float* dk, float* dv,
                        const AttentionShape& s) {
  float scale = 1.0f / std::sqrt(static_cast<float>(s.head_dim));
  long kv_elems = static_cast<long>(s.batch) * s.seq * s.kv_row_stride();
  for (long i = 0; i < kv_elems; ++i) dk[i] = dv[i] = 0.0f;
  RowMatrix dp(s.seq, s.seq);
  for (int b = 0; b < s.batch; ++b)
    for (int h = 0; h < s.heads; ++h) {
      long kv = s.kv_offset(b, s.kv_head_of(h));
      long qo = s.q_offset(b, h);
      auto qh = head_rows(q + qo, s.q_row_stride(), 0, s.seq, s.head_dim);
      auto kh = head_rows(k + kv, s.kv_row_stride(), 0, s.seq, s.head_dim);
      auto vh = head_rows(v + kv, s.kv_row_stride(), 0, s.seq, s.head_dim);
      auto doh = head_rows(dout + qo, s.q_row_stride(), 0, s.seq, s.head_dim);
      auto dqh = head_rows(dq + qo, s.q_row_stride(), 0, s.seq, s.head_dim);
      auto dkh = head_rows(dk + kv, s.kv_row_stride(), 0, s.seq, s.head_dim);
      auto dvh = head_rows(dv + kv, s.kv_row_stride(), 0, s.seq, s.head_dim);
      auto p = probs_of(probs, s, b, h);
      dvh.noalias() += p.transpose() * doh;
      dp.noalias() = doh * vh.transpose();
      // dS = P * (dP - rowsum(P * dP)): softmax backward (FlashAttention-2, Alg. 2 line 11).
      for (int i = 0; i < s.seq; ++i) {
        float row_dot = p.row(i).dot(dp.row(i));
        for (int j = 0; j < s.seq; ++j) dp(i, j) = softmax_backward_element(p(i, j), dp(i, j), row_dot);
      }
      dqh.noalias() = scale * (dp * kh);
      dkh.noalias() += scale * (dp.transpose() * qh);
    }
}

}  // namespace twinsim::kernels::cpu
