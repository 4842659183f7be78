#include "kernels/cpu/gemm.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <tuple>
#include <type_traits>

#include "kernels/common/storage.hpp"
#include "kernels/cpu/gemm_paths.hpp"
#include "kernels/cpu/linear.hpp"
#include "tests/unit/kernels/kernel_test_util.hpp"

namespace twinsim::kernels::testing {
namespace {

using cpu::gemm_backward;
using cpu::gemm_forward;

// C = op(A) op(B) by the textbook triple loop, row-major, in double.
template <typename T>
std::vector<double> naive_gemm(const std::vector<T>& a, const std::vector<T>& b, int m, int n,
                               int k, bool ta, bool tb) {
  std::vector<double> c(static_cast<size_t>(m) * n, 0.0);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j)
      for (int p = 0; p < k; ++p) {
        double aip = ta ? a[p * m + i] : a[i * k + p];
        double bpj = tb ? b[j * k + p] : b[p * n + j];
        c[i * n + j] += aip * bpj;
      }
  return c;
}

class GemmShapes : public ::testing::TestWithParam<std::tuple<int, int, int, bool, bool>> {};

TEST_P(GemmShapes, ForwardMatchesTripleLoopWithAlphaBeta) {
  auto [m, n, k, ta, tb] = GetParam();
  auto a = random_vector(m * k, 1), b = random_vector(k * n, 2), c = random_vector(m * n, 3);
  auto ab = naive_gemm(a, b, m, n, k, ta, tb);
  std::vector<double> expected(m * n);
  for (int i = 0; i < m * n; ++i) expected[i] = 0.5 * ab[i] + 2.0 * c[i];
  gemm_forward(a.data(), b.data(), c.data(), m, n, k, ta, tb, 0.5f, 2.0f);
  expect_all_near(c, expected, 1e-5, 1e-5, "C");
}

TEST_P(GemmShapes, BetaZeroIgnoresGarbageInC) {
  auto [m, n, k, ta, tb] = GetParam();
  auto a = random_vector(m * k, 4), b = random_vector(k * n, 5);
  std::vector<float> c(m * n, std::numeric_limits<float>::quiet_NaN());
  gemm_forward(a.data(), b.data(), c.data(), m, n, k, ta, tb);
  expect_all_near(c, naive_gemm(a, b, m, n, k, ta, tb), 1e-5, 1e-5, "C");
}

TEST_P(GemmShapes, BackwardMatchesFiniteDifferences) {
  auto [m, n, k, ta, tb] = GetParam();
  auto a = random_vector(m * k, 6), b = random_vector(k * n, 7), dc = random_vector(m * n, 8);
  std::vector<float> da(m * k), db(k * n);
  gemm_backward(a.data(), b.data(), dc.data(), da.data(), db.data(), m, n, k, ta, tb);
  auto a64 = to_double(a), b64 = to_double(b);
  auto loss_a = [&](const std::vector<double>& x) { return weighted_sum(naive_gemm(x, b64, m, n, k, ta, tb), dc); };
  auto loss_b = [&](const std::vector<double>& x) { return weighted_sum(naive_gemm(a64, x, m, n, k, ta, tb), dc); };
  expect_all_near(da, numeric_gradient(loss_a, a64), 1e-4, 1e-4, "dA");
  expect_all_near(db, numeric_gradient(loss_b, b64), 1e-4, 1e-4, "dB");
  // accumulate adds the same gradient a second time.
  gemm_backward(a.data(), b.data(), dc.data(), da.data(), nullptr, m, n, k, ta, tb, true);
  auto twice = numeric_gradient(loss_a, a64);
  for (auto& g : twice) g *= 2;
  expect_all_near(da, twice, 1e-4, 1e-4, "2 dA");
}

INSTANTIATE_TEST_SUITE_P(AllTransposes, GemmShapes,
                         ::testing::Combine(::testing::Values(7), ::testing::Values(5),
                                            ::testing::Values(3, 11), ::testing::Bool(),
                                            ::testing::Bool()));

TEST(Gemm, LargerOddShapeUsesBlockedPathCorrectly) {
  // Big enough that Eigen switches from its small-product path to the blocked GEBP kernel.
  int m = 67, n = 45, k = 131;
  auto a = random_vector(m * k, 9), b = random_vector(n * k, 10);
  std::vector<float> c(m * n);
  gemm_forward(a.data(), b.data(), c.data(), m, n, k, false, true);
  expect_all_near(c, naive_gemm(a, b, m, n, k, false, true), 1e-4, 1e-4, "C");
}

TEST(Gemm, PortableBuildMatchesTooWhenTheCpuDispatchesToAvx2) {
  // gemm_forward runs the AVX2 build on AVX2 machines, so the tests above cover that one
  // there; check the portable build explicitly so both stay tested.
  ::testing::Test::RecordProperty("gemm_backend", cpu::gemm_backend());
  int m = 40, n = 33, k = 70;
  auto a = random_vector(k * m, 15), b = random_vector(k * n, 16), c = random_vector(m * n, 17);
  auto ab = naive_gemm(a, b, m, n, k, true, false);
  std::vector<double> expected(m * n);
  for (int i = 0; i < m * n; ++i) expected[i] = ab[i] + c[i];
  cpu::detail::gemm_portable(a.data(), b.data(), c.data(), m, n, k, true, false, 1.0f, 1.0f);
  expect_all_near(c, expected, 1e-4, 1e-4, "C");
}

// ---- Mixed precision: A, B, C each float, bf16 or fp16 ----

// The logical [rows, cols] matrix x stored as the GEMM reads it: as is, or transposed.
template <class T>
std::vector<T> stored(const std::vector<T>& x, int rows, int cols, bool trans) {
  return trans ? transposed(x, rows, cols) : x;
}

// The exact alpha op(A) op(B) + beta C_old of the rounded inputs, and for each element the
// fp32 allowance gamma_(k+3) (|alpha| sum |a b| + |beta c|) (kernel_test_util.hpp; the +3
// covers alpha's product, beta's product and their sum).
Fp32Reference exact_c(const std::vector<double>& a, const std::vector<double>& b,
                      const std::vector<double>& c_old, int m, int n, int k, double alpha, double beta) {
  const auto p = product(a, b, m, n, k), p_abs = product(magnitudes(a), magnitudes(b), m, n, k);
  const double gamma = fp32_gamma(k + 3);
  Fp32Reference e{std::vector<double>(p.size()), std::vector<double>(p.size())};
  for (size_t i = 0; i < p.size(); ++i) {
    e.exact[i] = alpha * p[i] + beta * c_old[i];
    e.fp32_bound[i] = gamma * (std::abs(alpha) * p_abs[i] + std::abs(beta * c_old[i]));
  }
  return e;
}

template <class T>
T nan_of() {
  if constexpr (std::is_same_v<T, float>) return std::numeric_limits<float>::quiet_NaN();
  else if constexpr (std::is_same_v<T, bf16>) return T{0x7fc0};
  else return T{0x7e00};
}

struct GemmCase {
  int m, n, k;
};

// One shape, every transpose, alpha != 1 with beta 0 (C pre-filled with NaN: must not be
// read) and beta != 0, against double math on the same rounded inputs, every element within
// the fp32 bound plus half a gap of TC (kernel_test_util.hpp). Twice: on inputs in [-1, 1],
// whose sums cancel, and on inputs in [0, 1] with beta > 0, where nothing cancels and the
// allowance shrinks to about half an ulp of TC, so a second rounding fails.
template <class TA, class TB, class TC>
void check_mixed_gemm(GemmCase s, unsigned seed) {
  for (bool one_sign : {false, true}) {
    const float lo = one_sign ? 0.0f : -1.0f;
    const auto a = random_storage<TA>(static_cast<long>(s.m) * s.k, seed, lo);
    const auto b = random_storage<TB>(static_cast<long>(s.k) * s.n, seed + 1, lo);
    const auto c_old = random_storage<TC>(static_cast<long>(s.m) * s.n, seed + 2, lo);
    const float alpha = 0.75f;
    for (float beta : {0.0f, one_sign ? 1.25f : -1.25f}) {
      const Fp32Reference exact =
          exact_c(widen<double>(a), widen<double>(b), widen<double>(c_old), s.m, s.n, s.k, alpha, beta);
      for (bool ta : {false, true})
        for (bool tb : {false, true}) {
          std::vector<TC> c = beta == 0.0f ? std::vector<TC>(c_old.size(), nan_of<TC>()) : c_old;
          gemm_forward(stored(a, s.m, s.k, ta).data(), stored(b, s.k, s.n, tb).data(), c.data(), s.m, s.n, s.k, ta,
                       tb, alpha, beta);
          expect_within_bound(c, exact,
                              std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k) +
                                  (one_sign ? " one-sign" : " signed") + " ta " + std::to_string(ta) + " tb " +
                                  std::to_string(tb) + " beta " + std::to_string(beta));
        }
    }
  }
}

template <class Types>
class MixedGemm : public ::testing::Test {};

using AllStorageTriples = ::testing::Types<
    std::tuple<float, float, float>, std::tuple<float, float, bf16>, std::tuple<float, float, fp16>,
    std::tuple<float, bf16, float>, std::tuple<float, bf16, bf16>, std::tuple<float, bf16, fp16>,
    std::tuple<float, fp16, float>, std::tuple<float, fp16, bf16>, std::tuple<float, fp16, fp16>,
    std::tuple<bf16, float, float>, std::tuple<bf16, float, bf16>, std::tuple<bf16, float, fp16>,
    std::tuple<bf16, bf16, float>, std::tuple<bf16, bf16, bf16>, std::tuple<bf16, bf16, fp16>,
    std::tuple<bf16, fp16, float>, std::tuple<bf16, fp16, bf16>, std::tuple<bf16, fp16, fp16>,
    std::tuple<fp16, float, float>, std::tuple<fp16, float, bf16>, std::tuple<fp16, float, fp16>,
    std::tuple<fp16, bf16, float>, std::tuple<fp16, bf16, bf16>, std::tuple<fp16, bf16, fp16>,
    std::tuple<fp16, fp16, float>, std::tuple<fp16, fp16, bf16>, std::tuple<fp16, fp16, fp16>>;
TYPED_TEST_SUITE(MixedGemm, AllStorageTriples);

TYPED_TEST(MixedGemm, EveryTransposeAlphaBetaAndShapeWithinTheFp32BoundOfTheExactSum) {
  using TA = std::tuple_element_t<0, TypeParam>;
  using TB = std::tuple_element_t<1, TypeParam>;
  using TC = std::tuple_element_t<2, TypeParam>;
  // 300 x 517 x 270: more than one 256-tile in m, n and k, none a multiple of it; then
  // exactly one tile, and the tiny shapes.
  for (GemmCase s : {GemmCase{300, 517, 270}, GemmCase{256, 256, 256}, GemmCase{3, 5, 7},
                     GemmCase{1, 1, 1}})
    check_mixed_gemm<TA, TB, TC>(s, 100 + s.m);
}

TEST(MixedGemm, AllFloatStaysTheSingleEigenProductBitForBit) {
  // The 16-bit path tiles k, which sums in another order: gemm_forward<float, float, float>
  // must not take it, but run the same build gemm_backend() names on the whole matrices.
  int m = 300, n = 517, k = 270;
  auto a = random_vector(m * k, 31), b = random_vector(n * k, 32);
  std::vector<float> c(m * n), direct(m * n);
  gemm_forward(a.data(), b.data(), c.data(), m, n, k, false, true, 0.5f, 0.0f);
#if defined(TWINSIM_GEMM_AVX2)
  if (cpu::detail::cpu_has_avx2_fma())
    cpu::detail::gemm_avx2(a.data(), b.data(), direct.data(), m, n, k, false, true, 0.5f, 0.0f);
  else
#endif
    cpu::detail::gemm_portable(a.data(), b.data(), direct.data(), m, n, k, false, true, 0.5f, 0.0f);
  EXPECT_EQ(std::memcmp(c.data(), direct.data(), sizeof(float) * c.size()), 0);
}

// Two plausible mistakes, each rounding more than once, must fail the check the tests above
// pass, or those passes would prove nothing: on one-sign inputs (where the allowance is
// about half an ulp) with k long enough for several 256-tiles, in bf16 and in fp16.
template <class T>
void expect_check_catches_rounding_more_than_once(int k) {
  const int m = 64, n = 96;
  const auto a = random_storage<T>(m * k, 41, 0.0f), b = random_storage<T>(k * n, 42, 0.0f);
  const auto c_old = random_storage<T>(m * n, 43, 0.0f);
  const float alpha = 0.75f, beta = 1.25f;
  std::vector<T> c = c_old;
  gemm_forward(a.data(), b.data(), c.data(), m, n, k, false, false, alpha, beta);
  const auto a64 = widen<double>(a), b64 = widen<double>(b), c_old64 = widen<double>(c_old);
  const Fp32Reference exact = exact_c(a64, b64, c_old64, m, n, k, alpha, beta);
  const auto p = product(a64, b64, m, n, k);
  // the product rounded to T, then the sum with beta C rounded again
  std::vector<double> epilogue_twice(m * n), k_tiles_rounded(m * n, 0.0);
  for (int i = 0; i < m * n; ++i) epilogue_twice[i] = to_float(round_once<T>(alpha * p[i])) + beta * c_old64[i];
  // the accumulator rounded to T after every 256-long k-tile (C kept in T between tiles)
  for (int p0 = 0; p0 < k; p0 += 256) {
    const int len = std::min(256, k - p0);
    std::vector<double> a_slice, b_slice(b64.begin() + static_cast<long>(p0) * n,
                                         b64.begin() + static_cast<long>(p0 + len) * n);
    for (int i = 0; i < m; ++i)
      a_slice.insert(a_slice.end(), a64.begin() + static_cast<long>(i) * k + p0,
                     a64.begin() + static_cast<long>(i) * k + p0 + len);
    const auto part = product(a_slice, b_slice, m, n, len);
    for (int i = 0; i < m * n; ++i) k_tiles_rounded[i] = to_float(round_once<T>(k_tiles_rounded[i] + part[i]));
  }
  for (int i = 0; i < m * n; ++i) k_tiles_rounded[i] = alpha * k_tiles_rounded[i] + beta * c_old64[i];

  const BoundCheck right = check_against_bound(c, exact);
  EXPECT_TRUE(right.ok()) << describe(right);
  std::vector<T> wrong(m * n);
  for (int i = 0; i < m * n; ++i) wrong[i] = round_once<T>(epilogue_twice[i]);
  const BoundCheck twice = check_against_bound(wrong, exact);
  EXPECT_FALSE(twice.ok()) << describe(twice);
  for (int i = 0; i < m * n; ++i) wrong[i] = round_once<T>(k_tiles_rounded[i]);
  const BoundCheck tiles = check_against_bound(wrong, exact);
  EXPECT_FALSE(tiles.ok()) << describe(tiles);
  ::testing::Test::RecordProperty("gemm_forward", describe(right));
  ::testing::Test::RecordProperty("epilogue_twice", describe(twice));
  ::testing::Test::RecordProperty("k_tiles_rounded", describe(tiles));
}

// bf16: k u = 2.4e-4 at k 4096, far below half a bf16 ulp (2e-3 to 3.9e-3 of the value).
TEST(MixedGemm, TheCheckCatchesRoundingMoreThanOnceInBf16) { expect_check_catches_rounding_more_than_once<bf16>(4096); }
// fp16: half an ulp is 2.4e-4 to 4.9e-4 of the value, so k = 600 (k u = 3.6e-5), three tiles.
TEST(MixedGemm, TheCheckCatchesRoundingMoreThanOnceInFp16) { expect_check_catches_rounding_more_than_once<fp16>(600); }

// The tile loops widen on load and round on store with storage.hpp's conversions, once
// each. A [rows, 1] x B [1, 1] = 1 passes each value through unchanged
// but for the widening on load and the rounding on store (x * 1 is exact; only -0 comes
// out +0, as from any GEMM, whose sums start at +0: so the reference is x + 0).
template <class TA, class TC>
std::vector<TC> pass_through(const std::vector<TA>& column) {
  const float one = 1.0f;
  std::vector<TC> out(column.size());
  gemm_forward(column.data(), &one, out.data(), static_cast<int>(column.size()), 1, 1, false, false);
  return out;
}

template <class T>
void expect_widens_every_pattern() {
  std::vector<T> all(65536);
  for (int i = 0; i < 65536; ++i) all[i] = T{static_cast<std::uint16_t>(i)};
  const auto wide = pass_through<T, float>(all);
  int mismatches = 0;
  for (int i = 0; i < 65536 && mismatches < 5; ++i) {
    const float want = to_float(all[i]) + 0.0f;
    const bool same = std::isnan(want) ? std::isnan(wide[i]) : float_bits(wide[i]) == float_bits(want);
    if (!same) ADD_FAILURE() << "pattern 0x" << std::hex << i << ": " << wide[i] << " vs " << want, ++mismatches;
  }
}

template <class T>
void expect_rounds_like_from_float() {
  // every sign/exponent/top-mantissa half of fp32 with low halves at and around the
  // rounding ties of bf16 (bit 15) and fp16 (bit 12), and a few others
  std::vector<float> values;
  for (std::uint32_t high = 0; high < 65536; ++high)
    for (std::uint32_t low : {0x0000u, 0x0001u, 0x0fffu, 0x1000u, 0x1001u, 0x3000u, 0x7fffu, 0x8000u,
                              0x8001u, 0xb000u, 0xffffu})
      values.push_back(bits_float(high << 16 | low));
  const auto rounded = pass_through<float, T>(values);
  int mismatches = 0;
  for (size_t i = 0; i < values.size() && mismatches < 5; ++i) {
    const T want = from_float<T>(values[i] + 0.0f);
    const bool same = std::isnan(values[i]) ? std::isnan(to_float(rounded[i])) : rounded[i].bits == want.bits;
    if (!same)
      ADD_FAILURE() << "fp32 0x" << std::hex << float_bits(values[i]) << ": 0x" << rounded[i].bits
                    << " vs 0x" << want.bits, ++mismatches;
  }
}

TEST(MixedGemm, WidensEvery16BitPatternExactly) {
  expect_widens_every_pattern<bf16>();
  expect_widens_every_pattern<fp16>();
}

TEST(MixedGemm, RoundsOnStoreExactlyAsFromFloat) {
  expect_rounds_like_from_float<bf16>();
  expect_rounds_like_from_float<fp16>();
}

TEST(MixedGemm, UsesOnlyTheWorkspaceItIsGivenAndGivesTheSameResult) {
  // Guards on both sides of the buffer catch a tile written out of bounds; a result equal
  // to the built-in workspace's shows the buffer is all the scratch there is.
  const float sentinel = -12345.0f;
  const long guard = 4096;
  std::vector<float> buffer(cpu::kGemmWorkspaceFloats + 2 * guard, sentinel);
  float* workspace = buffer.data() + guard;
  int m = 300, n = 517, k = 270;
  const auto a = random_storage<bf16>(m * k, 51);
  const auto b = random_storage<fp16>(k * n, 52);
  const auto c_old = random_storage<bf16>(m * n, 53);
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      std::vector<bf16> with_default = c_old, with_buffer = c_old;
      cpu::set_gemm_workspace(nullptr);
      gemm_forward(a.data(), b.data(), with_default.data(), m, n, k, ta, tb, 0.5f, 1.0f);
      cpu::set_gemm_workspace(workspace);
      gemm_forward(a.data(), b.data(), with_buffer.data(), m, n, k, ta, tb, 0.5f, 1.0f);
      cpu::set_gemm_workspace(nullptr);
      EXPECT_EQ(std::memcmp(with_default.data(), with_buffer.data(), sizeof(bf16) * m * n), 0)
          << "ta " << ta << " tb " << tb;
    }
  const long used = std::count_if(workspace, workspace + cpu::kGemmWorkspaceFloats,
                                  [&](float x) { return x != sentinel; });
  EXPECT_GT(used, 0) << "the GEMM did not use the buffer";
  EXPECT_TRUE(std::all_of(buffer.begin(), buffer.begin() + guard, [&](float x) { return x == sentinel; }));
  EXPECT_TRUE(std::all_of(buffer.end() - guard, buffer.end(), [&](float x) { return x == sentinel; }));
}

// y = x W^T + b, W [out, in], in double.
std::vector<double> naive_linear(const std::vector<double>& x, const std::vector<double>& w,
                                 const std::vector<double>& bias, int tokens, int in, int out) {
  std::vector<double> y(tokens * out);
  for (int t = 0; t < tokens; ++t)
    for (int o = 0; o < out; ++o) {
      double s = bias[o];
      for (int i = 0; i < in; ++i) s += x[t * in + i] * w[o * in + i];
      y[t * out + o] = s;
    }
  return y;
}

TEST(Linear, ForwardAndThreeBackwardOpsMatchReference) {
  int tokens = 6, in = 5, out = 4;
  auto x = random_vector(tokens * in, 11), w = random_vector(out * in, 12);
  auto bias = random_vector(out, 13), dy = random_vector(tokens * out, 14);
  std::vector<float> y(tokens * out), dx(tokens * in), dw(out * in), db(out);
  auto x64 = to_double(x), w64 = to_double(w), b64 = to_double(bias);

  cpu::linear_forward(x.data(), w.data(), bias.data(), y.data(), tokens, in, out);
  expect_all_near(y, naive_linear(x64, w64, b64, tokens, in, out), 1e-5, 1e-5, "y");

  cpu::linear_backward_input(dy.data(), w.data(), dx.data(), tokens, in, out);
  cpu::linear_backward_weight(dy.data(), x.data(), dw.data(), tokens, in, out, false);
  cpu::linear_backward_bias(dy.data(), db.data(), tokens, out, false);
  auto lx = [&](const std::vector<double>& v) { return weighted_sum(naive_linear(v, w64, b64, tokens, in, out), dy); };
  auto lw = [&](const std::vector<double>& v) { return weighted_sum(naive_linear(x64, v, b64, tokens, in, out), dy); };
  auto lb = [&](const std::vector<double>& v) { return weighted_sum(naive_linear(x64, w64, v, tokens, in, out), dy); };
  expect_all_near(dx, numeric_gradient(lx, x64), 1e-4, 1e-4, "dx");
  expect_all_near(dw, numeric_gradient(lw, w64), 1e-4, 1e-4, "dW");
  expect_all_near(db, numeric_gradient(lb, b64), 1e-4, 1e-4, "db");

  // A second micro-batch accumulates: the weight grads double.
  auto dw_once = dw, db_once = db;
  cpu::linear_backward_weight(dy.data(), x.data(), dw.data(), tokens, in, out, true);
  cpu::linear_backward_bias(dy.data(), db.data(), tokens, out, true);
  for (auto& g : dw_once) g *= 2;
  for (auto& g : db_once) g *= 2;
  expect_all_near(dw, dw_once, 1e-5, 1e-5, "2 dW");
  expect_all_near(db, db_once, 1e-5, 1e-5, "2 db");
}

}  // namespace
}  // namespace twinsim::kernels::testing
