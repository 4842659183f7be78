#include "kernels/cpu/activation.hpp"

#include <cmath>

#include "kernels/common/activation_math.hpp"
#include "tests/unit/kernels/kernel_test_util.hpp"

namespace twinsim::kernels::testing {
namespace {

// GeLU tanh approximation (Hendrycks & Gimpel 2016, Sec. 2), in double.
double naive_gelu(double x) {
  return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}

double naive_silu(double x) { return x / (1 + std::exp(-x)); }

TEST(Gelu, SigmoidFormMatchesTanhFormEverywhere) {
  // x sigmoid(2u) against 0.5 x (1 + tanh(u)) in double, from deep saturation (exp
  // overflows to inf or underflows to 0) through zero
  for (double x = -60; x <= 60; x += 0.00731) {
    const float got = gelu_tanh(static_cast<float>(x)), grad = gelu_tanh_grad(static_cast<float>(x));
    ASSERT_FALSE(std::isnan(got) || std::isnan(grad)) << x;
    const double want = naive_gelu(static_cast<float>(x));
    // fp32 rounds u itself, which exp(-2u) turns into a relative error of |2u| ulp; and
    // where 1 + tanh(u) < 2^-53 double rounds the reference to 0 (+ 1e-15)
    const double u = std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x);
    ASSERT_NEAR(got, want, 4e-7 * (1 + std::abs(2 * u)) * std::abs(want) + 1e-15) << x;
  }
  EXPECT_EQ(gelu_tanh(-1e30f), 0.0f);
  EXPECT_EQ(gelu_tanh(1e30f), 1e30f);
  EXPECT_EQ(gelu_tanh(0.0f), 0.0f);
}

TEST(Gelu, KnownValues) {
  // Exact GeLU is x * Phi(x) (Hendrycks & Gimpel 2016, Sec. 2) with normal-table values
  // Phi(1) = 0.841345, Phi(-3) = 0.0013499; the tanh approximation lands within 5e-4.
  float x[3] = {0.0f, 1.0f, -3.0f}, y[3];
  cpu::gelu_forward(x, y, 3);
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_NEAR(y[1], 0.841345f, 5e-4f);
  EXPECT_NEAR(y[2], -3.0 * 0.0013499, 5e-4);  // -3 * Phi(-3)
}

TEST(Gelu, ForwardAndBackward) {
  auto x = random_vector(64, 1, -4, 4), dy = random_vector(64, 2);
  std::vector<float> y(64), dx(64);
  cpu::gelu_forward(x.data(), y.data(), 64);
  cpu::gelu_backward(dy.data(), x.data(), dx.data(), 64);
  auto x64 = to_double(x);
  std::vector<double> expected(64);
  for (int i = 0; i < 64; ++i) expected[i] = naive_gelu(x64[i]);
  expect_all_near(y, expected, 1e-6, 1e-5, "y");
  auto loss = [&](const std::vector<double>& v) {
    double s = 0;
    for (int i = 0; i < 64; ++i) s += dy[i] * naive_gelu(v[i]);
    return s;
  };
  expect_all_near(dx, numeric_gradient(loss, x64), 1e-5, 1e-4, "dx");
}

TEST(SwiGlu, ForwardAndBackward) {
  int n = 40;
  auto gate = random_vector(n, 3, -5, 5), up = random_vector(n, 4, -2, 2), dy = random_vector(n, 5);
  std::vector<float> y(n), dgate(n), dup(n);
  cpu::swiglu_forward(gate.data(), up.data(), y.data(), n);
  cpu::swiglu_backward(dy.data(), gate.data(), up.data(), dgate.data(), dup.data(), n);
  auto g64 = to_double(gate), u64 = to_double(up);
  std::vector<double> expected(n);
  for (int i = 0; i < n; ++i) expected[i] = naive_silu(g64[i]) * u64[i];
  expect_all_near(y, expected, 1e-6, 1e-5, "y");
  auto loss = [&](const std::vector<double>& g, const std::vector<double>& u) {
    double s = 0;
    for (int i = 0; i < n; ++i) s += dy[i] * naive_silu(g[i]) * u[i];
    return s;
  };
  auto lg = [&](const std::vector<double>& v) { return loss(v, u64); };
  auto lu = [&](const std::vector<double>& v) { return loss(g64, v); };
  expect_all_near(dgate, numeric_gradient(lg, g64), 1e-5, 1e-4, "dgate");
  expect_all_near(dup, numeric_gradient(lu, u64), 1e-5, 1e-4, "dup");
}

}  // namespace
}  // namespace twinsim::kernels::testing
