#include "kernels/cpu/gemm.hpp"

#include <cmath>
#include <limits>
#include <tuple>

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
