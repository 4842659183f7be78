#include "kernels/cpu/norm.hpp"

#include <cmath>

#include "tests/unit/kernels/kernel_test_util.hpp"

namespace twinsim::kernels::testing {
namespace {

constexpr int kRows = 3, kDim = 8;
constexpr float kEps = 1e-5f;

// LayerNorm by its definition (Ba et al. 2016, Eq. 4), biased variance as PyTorch uses.
std::vector<double> naive_layernorm(const std::vector<double>& x, const std::vector<double>& g,
                                    const std::vector<double>& b) {
  std::vector<double> y(x.size());
  for (int r = 0; r < kRows; ++r) {
    double mean = 0, var = 0;
    for (int i = 0; i < kDim; ++i) mean += x[r * kDim + i] / kDim;
    for (int i = 0; i < kDim; ++i) var += std::pow(x[r * kDim + i] - mean, 2) / kDim;
    for (int i = 0; i < kDim; ++i)
      y[r * kDim + i] = (x[r * kDim + i] - mean) / std::sqrt(var + kEps) * g[i] + b[i];
  }
  return y;
}

// RMSNorm by its definition (Zhang & Sennrich 2019, Eq. 4).
std::vector<double> naive_rmsnorm(const std::vector<double>& x, const std::vector<double>& g) {
  std::vector<double> y(x.size());
  for (int r = 0; r < kRows; ++r) {
    double ms = 0;
    for (int i = 0; i < kDim; ++i) ms += x[r * kDim + i] * x[r * kDim + i] / kDim;
    for (int i = 0; i < kDim; ++i) y[r * kDim + i] = x[r * kDim + i] / std::sqrt(ms + kEps) * g[i];
  }
  return y;
}

TEST(LayerNorm, ForwardMatchesDefinitionAndSavesStatistics) {
  auto x = random_vector(kRows * kDim, 1, -2, 3), g = random_vector(kDim, 2), b = random_vector(kDim, 3);
  std::vector<float> y(x.size()), mean(kRows), rstd(kRows);
  cpu::layernorm_forward(x.data(), g.data(), b.data(), y.data(), mean.data(), rstd.data(), kRows, kDim, kEps);
  expect_all_near(y, naive_layernorm(to_double(x), to_double(g), to_double(b)), 1e-5, 1e-5, "y");
  double mean0 = 0;
  for (int i = 0; i < kDim; ++i) mean0 += x[i] / double(kDim);
  EXPECT_NEAR(mean[0], mean0, 1e-6);
}

TEST(LayerNorm, BackwardMatchesFiniteDifferences) {
  auto x = random_vector(kRows * kDim, 4, -2, 3), g = random_vector(kDim, 5), b = random_vector(kDim, 6);
  auto dy = random_vector(kRows * kDim, 7);
  std::vector<float> y(x.size()), mean(kRows), rstd(kRows), dx(x.size()), dg(kDim), db(kDim);
  cpu::layernorm_forward(x.data(), g.data(), b.data(), y.data(), mean.data(), rstd.data(), kRows, kDim, kEps);
  cpu::layernorm_backward(dy.data(), x.data(), g.data(), mean.data(), rstd.data(), dx.data(), dg.data(),
                          db.data(), kRows, kDim, false);
  auto x64 = to_double(x), g64 = to_double(g), b64 = to_double(b);
  auto lx = [&](const std::vector<double>& v) { return weighted_sum(naive_layernorm(v, g64, b64), dy); };
  auto lg = [&](const std::vector<double>& v) { return weighted_sum(naive_layernorm(x64, v, b64), dy); };
  auto lb = [&](const std::vector<double>& v) { return weighted_sum(naive_layernorm(x64, g64, v), dy); };
  expect_all_near(dx, numeric_gradient(lx, x64), 1e-4, 1e-3, "dx");
  expect_all_near(dg, numeric_gradient(lg, g64), 1e-4, 1e-3, "dgamma");
  expect_all_near(db, numeric_gradient(lb, b64), 1e-4, 1e-3, "dbeta");
}

TEST(RmsNorm, ForwardMatchesDefinition) {
  auto x = random_vector(kRows * kDim, 8, -2, 3), g = random_vector(kDim, 9);
  std::vector<float> y(x.size()), rstd(kRows);
  cpu::rmsnorm_forward(x.data(), g.data(), y.data(), rstd.data(), kRows, kDim, kEps);
  expect_all_near(y, naive_rmsnorm(to_double(x), to_double(g)), 1e-5, 1e-5, "y");
}

TEST(RmsNorm, BackwardMatchesFiniteDifferences) {
  auto x = random_vector(kRows * kDim, 10, -2, 3), g = random_vector(kDim, 11), dy = random_vector(kRows * kDim, 12);
  std::vector<float> y(x.size()), rstd(kRows), dx(x.size()), dg(kDim);
  cpu::rmsnorm_forward(x.data(), g.data(), y.data(), rstd.data(), kRows, kDim, kEps);
  cpu::rmsnorm_backward(dy.data(), x.data(), g.data(), rstd.data(), dx.data(), dg.data(), kRows, kDim, false);
  auto x64 = to_double(x), g64 = to_double(g);
  auto lx = [&](const std::vector<double>& v) { return weighted_sum(naive_rmsnorm(v, g64), dy); };
  auto lg = [&](const std::vector<double>& v) { return weighted_sum(naive_rmsnorm(x64, v), dy); };
  expect_all_near(dx, numeric_gradient(lx, x64), 1e-4, 1e-3, "dx");
  expect_all_near(dg, numeric_gradient(lg, g64), 1e-4, 1e-3, "dgamma");
}

}  // namespace
}  // namespace twinsim::kernels::testing
