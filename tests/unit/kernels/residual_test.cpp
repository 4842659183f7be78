#include "kernels/cpu/residual.hpp"

#include "tests/unit/kernels/kernel_test_util.hpp"

namespace twinsim::kernels::testing {
namespace {

TEST(Residual, ForwardAddsBranchAndBroadcastBias) {
  const int rows = 5, cols = 7;
  auto x = random_vector(rows * cols, 1), branch = random_vector(rows * cols, 2), bias = random_vector(cols, 3);
  std::vector<float> y(rows * cols), y_nobias(rows * cols);
  cpu::residual_forward(x.data(), branch.data(), bias.data(), y.data(), rows, cols);
  cpu::residual_forward(x.data(), branch.data(), nullptr, y_nobias.data(), rows, cols);
  std::vector<double> expected(rows * cols), expected_nobias(rows * cols);
  for (int r = 0; r < rows; ++r)
    for (int j = 0; j < cols; ++j) {
      const int i = r * cols + j;
      expected_nobias[i] = static_cast<double>(x[i]) + branch[i];
      expected[i] = expected_nobias[i] + bias[j];
    }
  expect_all_near(y, expected, 1e-6, 1e-6, "y");
  expect_all_near(y_nobias, expected_nobias, 1e-6, 1e-6, "y without bias");
}

TEST(Residual, BiasGradientAgainstFiniteDifferences) {
  const int rows = 4, cols = 6;
  auto x = random_vector(rows * cols, 4), branch = random_vector(rows * cols, 5), bias = random_vector(cols, 6),
       dy = random_vector(rows * cols, 7);
  std::vector<float> dbias(cols, 0.25f);  // accumulate: added to what is there
  cpu::residual_backward(dy.data(), dbias.data(), rows, cols, true);
  auto loss = [&](const std::vector<double>& b) {
    double s = 0;
    for (int r = 0; r < rows; ++r)
      for (int j = 0; j < cols; ++j) s += dy[r * cols + j] * (x[r * cols + j] + branch[r * cols + j] + b[j]);
    return s;
  };
  std::vector<double> expected = numeric_gradient(loss, to_double(bias));
  for (double& g : expected) g += 0.25;
  expect_all_near(dbias, expected, 1e-5, 1e-4, "dbias");
}

}  // namespace
}  // namespace twinsim::kernels::testing
