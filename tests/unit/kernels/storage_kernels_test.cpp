// The 16-bit instantiations of the CPU kernels against their float instantiation.
// Each test rounds random inputs to T, so the T run and the float run see identical values,
// and requires every T output to be from_float<T> of the float run's output: the kernel
// loads with to_float, does the float path's operations in the same order, and rounds
// once when it stores (common/storage.hpp). A second rounding anywhere (an intermediate
// stored in T, a 16-bit += across rows or blocks) shows up as outputs one ulp off.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <random>
#include <vector>

#include "kernels/common/storage.hpp"
#include "kernels/cpu/activation.hpp"
#include "kernels/cpu/attention.hpp"
#include "kernels/cpu/embedding.hpp"
#include "kernels/cpu/flash_attention.hpp"
#include "kernels/cpu/norm.hpp"
#include "kernels/cpu/optimizer.hpp"
#include "kernels/cpu/residual.hpp"
#include "kernels/cpu/rope.hpp"
#include "tests/unit/kernels/kernel_test_util.hpp"

namespace twinsim::kernels::testing {
namespace {

// The same random values stored as T (t) and as float (f = to_float(t)).
template <class T>
struct Rounded {
  std::vector<T> t;
  std::vector<float> f;
};

template <class T>
Rounded<T> random_rounded(long n, unsigned seed, float lo = -1.0f, float hi = 1.0f) {
  Rounded<T> r;
  for (float x : random_vector(n, seed, lo, hi)) {
    r.t.push_back(from_float<T>(x));
    r.f.push_back(to_float(r.t.back()));
  }
  return r;
}

template <class T>
std::vector<float> widen(const std::vector<T>& v) {
  std::vector<float> out;
  for (T x : v) out.push_back(to_float(x));
  return out;
}

// A 16-bit pattern as an integer ordered like the values it encodes (sign-magnitude to
// two's complement): adjacent representable values differ by 1, one ulp, across zero too.
int ordered(std::uint16_t bits) {
  const int magnitude = bits & 0x7fff;
  return (bits & 0x8000) ? -magnitude : magnitude;
}

// How closely actual (T) matches the reference (float) rounded once to T.
struct Agreement {
  long n = 0, exact = 0;
  int max_ulps = 0;
  long worst = -1;  // index of the first element at max_ulps
  double exact_fraction() const { return n == 0 ? 1.0 : static_cast<double>(exact) / n; }
};

template <class T>
Agreement agreement(const std::vector<T>& actual, const std::vector<float>& reference) {
  Agreement a;
  a.n = static_cast<long>(actual.size());
  for (long i = 0; i < a.n; ++i) {
    const int ulps = std::abs(ordered(actual[i].bits) - ordered(from_float<T>(reference[i]).bits));
    if (ulps == 0) ++a.exact;
    if (ulps > a.max_ulps) a.max_ulps = ulps, a.worst = i;
  }
  return a;
}

// Every element within 1 ulp of the once-rounded reference, and (by default) all exact: the
// T path runs the float path's operations, so nothing but the final rounding differs.
template <class T>
void expect_rounded_once(const std::vector<T>& actual, const std::vector<float>& reference,
                         const char* what, double min_exact_fraction = 1.0) {
  ASSERT_EQ(actual.size(), reference.size()) << what;
  const Agreement a = agreement(actual, reference);
  EXPECT_LE(a.max_ulps, 1) << what << "[" << a.worst << "]: " << to_float(actual[a.worst])
                           << " vs float " << reference[a.worst];
  EXPECT_GE(a.exact_fraction(), min_exact_fraction)
      << what << ": " << a.exact << " of " << a.n << " exact";
}

template <class T>
class StorageKernels : public ::testing::Test {};
using StorageTypes = ::testing::Types<bf16, fp16>;
TYPED_TEST_SUITE(StorageKernels, StorageTypes);

// The comparison can fail: a result rounded twice (x + branch stored in T, then + bias
// rounded again, as an unfused residual-plus-bias would) and a column sum rounded after
// every row (a 16-bit +=) are both caught.
TYPED_TEST(StorageKernels, ComparisonCatchesASecondRounding) {
  using T = TypeParam;
  const long n = 4096;
  auto x = random_rounded<T>(n, 1), branch = random_rounded<T>(n, 2), bias = random_rounded<T>(n, 3);
  std::vector<float> once(n);
  std::vector<T> twice(n);
  for (long i = 0; i < n; ++i) {
    once[i] = x.f[i] + branch.f[i] + bias.f[i];
    twice[i] = from_float<T>(to_float(from_float<T>(x.f[i] + branch.f[i])) + bias.f[i]);
  }
  EXPECT_LT(agreement(twice, once).exact_fraction(), 0.99);

  const int rows = 64, cols = 256;
  auto dy = random_rounded<T>(long(rows) * cols, 4);
  std::vector<float> sum_once(cols, 0.0f);
  std::vector<T> sum_each(cols, from_float<T>(0.0f));
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) {
      sum_once[c] += dy.f[r * cols + c];
      sum_each[c] = from_float<T>(to_float(sum_each[c]) + dy.f[r * cols + c]);
    }
  EXPECT_LT(agreement(sum_each, sum_once).exact_fraction(), 0.99);
}

TYPED_TEST(StorageKernels, Activations) {
  using T = TypeParam;
  const long n = 5000;
  auto x = random_rounded<T>(n, 10, -5, 5), up = random_rounded<T>(n, 11, -2, 2),
       dy = random_rounded<T>(n, 12);
  std::vector<T> y(n), dx(n), dup(n);
  std::vector<float> yf(n), dxf(n), dupf(n);

  cpu::gelu_forward(x.t.data(), y.data(), n);
  cpu::gelu_forward(x.f.data(), yf.data(), n);
  expect_rounded_once(y, yf, "gelu y");
  cpu::gelu_backward(dy.t.data(), x.t.data(), dx.data(), n);
  cpu::gelu_backward(dy.f.data(), x.f.data(), dxf.data(), n);
  expect_rounded_once(dx, dxf, "gelu dx");

  cpu::swiglu_forward(x.t.data(), up.t.data(), y.data(), n);
  cpu::swiglu_forward(x.f.data(), up.f.data(), yf.data(), n);
  expect_rounded_once(y, yf, "swiglu y");
  cpu::swiglu_backward(dy.t.data(), x.t.data(), up.t.data(), dx.data(), dup.data(), n);
  cpu::swiglu_backward(dy.f.data(), x.f.data(), up.f.data(), dxf.data(), dupf.data(), n);
  expect_rounded_once(dx, dxf, "swiglu dgate");
  expect_rounded_once(dup, dupf, "swiglu dup");
}

// LayerNorm with and without beta, both backward modes; accumulate starts from nonzero grads.
TYPED_TEST(StorageKernels, LayerNorm) {
  using T = TypeParam;
  const int rows = 24, dim = 96;
  const long e = long(rows) * dim;
  auto x = random_rounded<T>(e, 20, -3, 5), dy = random_rounded<T>(e, 21),
       gamma = random_rounded<T>(dim, 22, 0.5f, 1.5f), beta = random_rounded<T>(dim, 23);
  for (bool with_beta : {true, false}) {
    SCOPED_TRACE(with_beta ? "with beta" : "no beta");
    std::vector<T> y(e), dx(e);
    std::vector<float> yf(e), dxf(e), mean(rows), rstd(rows), mean_f(rows), rstd_f(rows);
    cpu::layernorm_forward(x.t.data(), gamma.t.data(), with_beta ? beta.t.data() : nullptr, y.data(),
                           mean.data(), rstd.data(), rows, dim, 1e-5f);
    cpu::layernorm_forward(x.f.data(), gamma.f.data(), with_beta ? beta.f.data() : nullptr, yf.data(),
                           mean_f.data(), rstd_f.data(), rows, dim, 1e-5f);
    expect_rounded_once(y, yf, "layernorm y");
    EXPECT_EQ(mean, mean_f);  // the statistics are float either way
    EXPECT_EQ(rstd, rstd_f);
    for (bool accumulate : {false, true}) {
      SCOPED_TRACE(accumulate ? "accumulate" : "overwrite");
      auto dgamma = random_rounded<T>(dim, 24), dbeta = random_rounded<T>(dim, 25);
      cpu::layernorm_backward(dy.t.data(), x.t.data(), gamma.t.data(), mean.data(), rstd.data(), dx.data(),
                              dgamma.t.data(), with_beta ? dbeta.t.data() : nullptr, rows, dim, accumulate);
      cpu::layernorm_backward(dy.f.data(), x.f.data(), gamma.f.data(), mean.data(), rstd.data(), dxf.data(),
                              dgamma.f.data(), with_beta ? dbeta.f.data() : nullptr, rows, dim, accumulate);
      expect_rounded_once(dx, dxf, "layernorm dx");
      expect_rounded_once(dgamma.t, dgamma.f, "layernorm dgamma");
      expect_rounded_once(dbeta.t, dbeta.f, "layernorm dbeta");  // untouched without beta
    }
  }
}

TYPED_TEST(StorageKernels, RmsNorm) {
  using T = TypeParam;
  const int rows = 24, dim = 96;
  const long e = long(rows) * dim;
  auto x = random_rounded<T>(e, 30, -3, 3), dy = random_rounded<T>(e, 31),
       gamma = random_rounded<T>(dim, 32, 0.5f, 1.5f);
  std::vector<T> y(e), dx(e);
  std::vector<float> yf(e), dxf(e), rstd(rows), rstd_f(rows);
  cpu::rmsnorm_forward(x.t.data(), gamma.t.data(), y.data(), rstd.data(), rows, dim, 1e-6f);
  cpu::rmsnorm_forward(x.f.data(), gamma.f.data(), yf.data(), rstd_f.data(), rows, dim, 1e-6f);
  expect_rounded_once(y, yf, "rmsnorm y");
  EXPECT_EQ(rstd, rstd_f);
  for (bool accumulate : {false, true}) {
    SCOPED_TRACE(accumulate ? "accumulate" : "overwrite");
    auto dgamma = random_rounded<T>(dim, 33);
    cpu::rmsnorm_backward(dy.t.data(), x.t.data(), gamma.t.data(), rstd.data(), dx.data(), dgamma.t.data(),
                          rows, dim, accumulate);
    cpu::rmsnorm_backward(dy.f.data(), x.f.data(), gamma.f.data(), rstd.data(), dxf.data(), dgamma.f.data(),
                          rows, dim, accumulate);
    expect_rounded_once(dx, dxf, "rmsnorm dx");
    expect_rounded_once(dgamma.t, dgamma.f, "rmsnorm dgamma");
  }
}

// Residual add with and without bias, in place (y aliasing x), and the bias grad.
TYPED_TEST(StorageKernels, Residual) {
  using T = TypeParam;
  const int rows = 64, cols = 80;
  const long e = long(rows) * cols;
  auto x = random_rounded<T>(e, 40), branch = random_rounded<T>(e, 41), bias = random_rounded<T>(cols, 42);
  std::vector<T> y(e);
  std::vector<float> yf(e);
  cpu::residual_forward(x.t.data(), branch.t.data(), bias.t.data(), y.data(), rows, cols);
  cpu::residual_forward(x.f.data(), branch.f.data(), bias.f.data(), yf.data(), rows, cols);
  expect_rounded_once(y, yf, "residual y");
  cpu::residual_forward(x.t.data(), branch.t.data(), nullptr, x.t.data(), rows, cols);
  cpu::residual_forward(x.f.data(), branch.f.data(), nullptr, x.f.data(), rows, cols);
  expect_rounded_once(x.t, x.f, "residual y in place, no bias");
  for (bool accumulate : {false, true}) {
    SCOPED_TRACE(accumulate ? "accumulate" : "overwrite");
    auto dbias = random_rounded<T>(cols, 43);
    cpu::residual_backward(branch.t.data(), dbias.t.data(), rows, cols, accumulate);
    cpu::residual_backward(branch.f.data(), dbias.f.data(), rows, cols, accumulate);
    expect_rounded_once(dbias.t, dbias.f, "residual dbias");
  }
}

TYPED_TEST(StorageKernels, Rope) {
  using T = TypeParam;
  const int batch = 2, seq = 17, heads = 3, head_dim = 32;
  const long e = long(batch) * seq * heads * head_dim;
  auto x = random_rounded<T>(e, 50, -2, 2);
  std::vector<T> y(e);
  std::vector<float> yf(e);
  cpu::rope_forward(x.t.data(), y.data(), batch, seq, heads, head_dim, 10000.0f, 3);
  cpu::rope_forward(x.f.data(), yf.data(), batch, seq, heads, head_dim, 10000.0f, 3);
  expect_rounded_once(y, yf, "rope y");
  cpu::rope_backward(x.t.data(), x.t.data(), batch, seq, heads, head_dim, 10000.0f, 3);  // in place
  cpu::rope_backward(x.f.data(), x.f.data(), batch, seq, heads, head_dim, 10000.0f, 3);
  expect_rounded_once(x.t, x.f, "rope dx in place");
}

// A small vocabulary so tokens repeat: each dwte row sums several rows of dout, from a
// nonzero start, and must still be rounded once.
TYPED_TEST(StorageKernels, Embedding) {
  using T = TypeParam;
  const int batch = 3, seq = 20, channels = 48, vocab = 11;
  std::vector<int> tokens(batch * seq);
  std::mt19937 gen(60);
  for (int& t : tokens) t = static_cast<int>(gen() % vocab);
  auto wte = random_rounded<T>(long(vocab) * channels, 61), wpe = random_rounded<T>(long(seq + 4) * channels, 62),
       dout = random_rounded<T>(long(batch) * seq * channels, 63);
  const long e = long(batch) * seq * channels;
  for (bool with_wpe : {true, false}) {
    SCOPED_TRACE(with_wpe ? "with wpe" : "no wpe");
    std::vector<T> out(e);
    std::vector<float> out_f(e);
    cpu::embedding_forward(tokens.data(), wte.t.data(), with_wpe ? wpe.t.data() : nullptr, out.data(), batch,
                           seq, channels);
    cpu::embedding_forward(tokens.data(), wte.f.data(), with_wpe ? wpe.f.data() : nullptr, out_f.data(), batch,
                           seq, channels);
    expect_rounded_once(out, out_f, "embedding out");
    auto dwte = random_rounded<T>(long(vocab) * channels, 64), dwpe = random_rounded<T>(long(seq + 4) * channels, 65);
    cpu::embedding_backward(dout.t.data(), tokens.data(), dwte.t.data(), with_wpe ? dwpe.t.data() : nullptr,
                            batch, seq, channels);
    cpu::embedding_backward(dout.f.data(), tokens.data(), dwte.f.data(), with_wpe ? dwpe.f.data() : nullptr,
                            batch, seq, channels);
    expect_rounded_once(dwte.t, dwte.f, "embedding dwte");
    expect_rounded_once(dwpe.t, dwpe.f, "embedding dwpe");
  }
}

// q, k, v, dout of one attention shape, as T and as float.
template <class T>
struct AttentionInputs {
  AttentionShape s;
  Rounded<T> q, k, v, dout;
  AttentionInputs(AttentionShape shape, unsigned seed) : s(shape) {
    const long qn = long(s.batch) * s.seq * s.q_row_stride(), kvn = long(s.batch) * s.seq * s.kv_row_stride();
    q = random_rounded<T>(qn, seed, -2, 2);
    k = random_rounded<T>(kvn, seed + 1, -2, 2);
    v = random_rounded<T>(kvn, seed + 2);
    dout = random_rounded<T>(qn, seed + 3);
  }
  long q_elems() const { return static_cast<long>(q.t.size()); }
  long kv_elems() const { return static_cast<long>(k.t.size()); }
};

// GQA (4 query heads on 2 kv heads), one head shape with several sequence lengths.
const AttentionShape kAttentionShapes[] = {
    {.batch = 2, .seq = 7, .heads = 4, .kv_heads = 2, .head_dim = 8},
    {.batch = 1, .seq = 100, .heads = 4, .kv_heads = 2, .head_dim = 16},
};

TYPED_TEST(StorageKernels, PlainAttention) {
  using T = TypeParam;
  for (const AttentionShape& shape : kAttentionShapes) {
    SCOPED_TRACE(shape.seq);
    AttentionInputs<T> in(shape, 70);
    const auto& s = in.s;
    const long pn = long(s.batch) * s.heads * s.seq * s.seq;
    std::vector<T> out(in.q_elems()), probs(pn), dq(in.q_elems()), dk(in.kv_elems()), dv(in.kv_elems());
    std::vector<float> out_f(in.q_elems()), probs_f(pn), dq_f(in.q_elems()), dk_f(in.kv_elems()), dv_f(in.kv_elems());
    cpu::attention_forward(in.q.t.data(), in.k.t.data(), in.v.t.data(), out.data(), probs.data(), s);
    cpu::attention_forward(in.q.f.data(), in.k.f.data(), in.v.f.data(), out_f.data(), probs_f.data(), s);
    expect_rounded_once(out, out_f, "attention out");
    expect_rounded_once(probs, probs_f, "attention probs");
    // The backward reads the saved probs: both runs get the T ones.
    const std::vector<float> saved = widen(probs);
    cpu::attention_backward(in.q.t.data(), in.k.t.data(), in.v.t.data(), probs.data(), in.dout.t.data(), dq.data(),
                            dk.data(), dv.data(), s);
    cpu::attention_backward(in.q.f.data(), in.k.f.data(), in.v.f.data(), saved.data(), in.dout.f.data(),
                            dq_f.data(), dk_f.data(), dv_f.data(), s);
    expect_rounded_once(dq, dq_f, "attention dq");
    expect_rounded_once(dk, dk_f, "attention dk");
    expect_rounded_once(dv, dv_f, "attention dv");
  }
}

// Tiles of 32 on seq 100: four query and four key blocks, so out, dq, dk and dv each
// collect several blocks (and dk, dv two query heads) before their single rounding.
TYPED_TEST(StorageKernels, FlashAttention) {
  using T = TypeParam;
  for (const AttentionShape& shape : kAttentionShapes)
    for (cpu::FlashTiles tiles : {cpu::FlashTiles{}, cpu::FlashTiles{32, 32}, cpu::FlashTiles{16, 8}}) {
      SCOPED_TRACE(::testing::Message() << "seq " << shape.seq << " tiles " << tiles.q << "x" << tiles.kv);
      AttentionInputs<T> in(shape, 80);
      const auto& s = in.s;
      const long ln = long(s.batch) * s.heads * s.seq;
      std::vector<T> out(in.q_elems()), dq(in.q_elems()), dk(in.kv_elems()), dv(in.kv_elems());
      std::vector<float> out_f(in.q_elems()), dq_f(in.q_elems()), dk_f(in.kv_elems()), dv_f(in.kv_elems());
      std::vector<float> lse(ln), lse_f(ln);
      cpu::flash_attention_forward(in.q.t.data(), in.k.t.data(), in.v.t.data(), out.data(), lse.data(), s, tiles);
      cpu::flash_attention_forward(in.q.f.data(), in.k.f.data(), in.v.f.data(), out_f.data(), lse_f.data(), s,
                                   tiles);
      expect_rounded_once(out, out_f, "flash out");
      EXPECT_EQ(lse, lse_f);  // float either way
      // The backward reads the saved out: both runs get the T one.
      const std::vector<float> saved = widen(out);
      cpu::flash_attention_backward(in.q.t.data(), in.k.t.data(), in.v.t.data(), out.data(), lse.data(),
                                    in.dout.t.data(), dq.data(), dk.data(), dv.data(), s, tiles);
      cpu::flash_attention_backward(in.q.f.data(), in.k.f.data(), in.v.f.data(), saved.data(), lse.data(),
                                    in.dout.f.data(), dq_f.data(), dk_f.data(), dv_f.data(), s, tiles);
      expect_rounded_once(dq, dq_f, "flash dq");
      expect_rounded_once(dk, dk_f, "flash dk");
      expect_rounded_once(dv, dv_f, "flash dv");
    }
}

// The optimizer updates fp32 master weights from 16-bit grads: bitwise the float kernel
// on the same (rounded) grads.
TYPED_TEST(StorageKernels, OptimizerTakes16BitGrads) {
  using T = TypeParam;
  const long n = 3000;
  auto grads = random_rounded<T>(n, 90);
  std::vector<float> params = random_vector(n, 91), m = random_vector(n, 92, 0, 0.1f), v = random_vector(n, 93, 0, 0.1f);
  std::vector<float> params_f = params, m_f = m, v_f = v;
  cpu::adamw_step(params.data(), grads.t.data(), m.data(), v.data(), n, 3, cpu::AdamWConfig{});
  cpu::adamw_step(params_f.data(), grads.f.data(), m_f.data(), v_f.data(), n, 3, cpu::AdamWConfig{});
  EXPECT_EQ(params, params_f);
  EXPECT_EQ(m, m_f);
  EXPECT_EQ(v, v_f);

  std::vector<float> buf = random_vector(n, 94), buf_f = buf;
  const cpu::SgdConfig momentum{.lr = 0.1f, .momentum = 0.9f, .weight_decay = 0.01f};
  cpu::sgd_step(params.data(), grads.t.data(), buf.data(), n, momentum);
  cpu::sgd_step(params_f.data(), grads.f.data(), buf_f.data(), n, momentum);
  EXPECT_EQ(params, params_f);
  EXPECT_EQ(buf, buf_f);
  cpu::sgd_step(params.data(), grads.t.data(), nullptr, n, cpu::SgdConfig{});
  cpu::sgd_step(params_f.data(), grads.f.data(), nullptr, n, cpu::SgdConfig{});
  EXPECT_EQ(params, params_f);
}

}  // namespace
}  // namespace twinsim::kernels::testing
