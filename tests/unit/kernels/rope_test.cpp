#include "kernels/cpu/rope.hpp"

#include <cmath>

#include "tests/unit/kernels/kernel_test_util.hpp"

namespace twinsim::kernels::testing {
namespace {

constexpr int kBatch = 2, kSeq = 5, kHeads = 3, kDim = 8;
constexpr float kTheta = 10000.0f;

// HF transformers apply_rotary_pos_emb: x * cos + rotate_half(x) * sin, with
// rotate_half(x) = cat(-x[d/2:], x[:d/2]) and freq_i = theta^(-2i/d) (RoFormer Eq. 15).
std::vector<double> naive_rope(const std::vector<double>& x, int pos_offset) {
  std::vector<double> y(x.size());
  int half = kDim / 2;
  for (int b = 0; b < kBatch; ++b)
    for (int s = 0; s < kSeq; ++s)
      for (int h = 0; h < kHeads; ++h)
        for (int i = 0; i < kDim; ++i) {
          int base = ((b * kSeq + s) * kHeads + h) * kDim;
          int pair = i % half;
          double angle = (s + pos_offset) * std::pow(double(kTheta), -2.0 * pair / kDim);
          double rotated = i < half ? -x[base + i + half] : x[base + i - half];
          y[base + i] = x[base + i] * std::cos(angle) + rotated * std::sin(angle);
        }
  return y;
}

TEST(Rope, PositionZeroIsIdentityAndNormIsPreserved) {
  auto x = random_vector(kBatch * kSeq * kHeads * kDim, 1);
  std::vector<float> y(x.size());
  cpu::rope_forward(x.data(), y.data(), kBatch, kSeq, kHeads, kDim, kTheta);
  for (int i = 0; i < kHeads * kDim; ++i) EXPECT_EQ(y[i], x[i]);  // b = 0, s = 0
  double nx = 0, ny = 0;
  for (size_t i = 0; i < x.size(); ++i) nx += x[i] * x[i], ny += y[i] * y[i];
  EXPECT_NEAR(ny, nx, 1e-4 * nx);  // a rotation
}

TEST(Rope, ForwardMatchesHfRotateHalf) {
  auto x = random_vector(kBatch * kSeq * kHeads * kDim, 2);
  std::vector<float> y(x.size());
  cpu::rope_forward(x.data(), y.data(), kBatch, kSeq, kHeads, kDim, kTheta, 7);
  expect_all_near(y, naive_rope(to_double(x), 7), 1e-5, 1e-5, "y");
}

TEST(Rope, BackwardMatchesFiniteDifferences) {
  auto x = random_vector(kBatch * kSeq * kHeads * kDim, 3), dy = random_vector(x.size(), 4);
  std::vector<float> dx(x.size());
  cpu::rope_backward(dy.data(), dx.data(), kBatch, kSeq, kHeads, kDim, kTheta, 3);
  auto loss = [&](const std::vector<double>& v) { return weighted_sum(naive_rope(v, 3), dy); };
  expect_all_near(dx, numeric_gradient(loss, to_double(x)), 1e-5, 1e-4, "dx");
}

}  // namespace
}  // namespace twinsim::kernels::testing
