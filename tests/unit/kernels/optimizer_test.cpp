#include "kernels/cpu/optimizer.hpp"

#include <cmath>

#include "tests/unit/kernels/kernel_test_util.hpp"

namespace twinsim::kernels::testing {
namespace {

// Two steps of Loshchilov & Hutter 2019, Algorithm 2, worked by hand with alpha = 1,
// eta_t = lr = 0.1, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, lambda = 0.01, theta_0 = 1:
//  t=1, g=0.5:   m = 0.1*0.5 = 0.05          v = 0.001*0.25 = 0.00025
//                m_hat = 0.05/0.1 = 0.5      v_hat = 0.00025/0.001 = 0.25
//                theta = 1 - 0.1*(0.5/0.5 + 0.01*1) = 0.899
//  t=2, g=-0.25: m = 0.045 - 0.025 = 0.02    v = 0.00024975 + 0.0000625 = 0.00031225
//                m_hat = 0.02/0.19 = 0.105263  v_hat = 0.00031225/0.001999 = 0.156203
//                theta = 0.899 - 0.1*(0.105263/0.395225 + 0.01*0.899) = 0.871467
TEST(AdamW, TwoStepsMatchAlgorithm2ByHand) {
  cpu::AdamWConfig config{.lr = 0.1f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f,
                          .weight_decay = 0.01f};
  float theta = 1.0f, m = 0.0f, v = 0.0f;
  float g1 = 0.5f;
  cpu::adamw_step(&theta, &g1, &m, &v, 1, 1, config);
  EXPECT_NEAR(m, 0.05f, 1e-7f);
  EXPECT_NEAR(v, 0.00025f, 1e-8f);  // 1 - 0.999f is 0.00099999 in fp32
  EXPECT_NEAR(theta, 0.899f, 1e-6f);
  float g2 = -0.25f;
  cpu::adamw_step(&theta, &g2, &m, &v, 1, 2, config);
  EXPECT_NEAR(m, 0.02f, 1e-7f);
  EXPECT_NEAR(v, 0.00031225f, 1e-8f);
  EXPECT_NEAR(theta, 0.871467f, 2e-6f);
}

TEST(AdamW, FirstStepWithoutDecayMovesEachParameterByLr) {
  // Bias correction makes the first step m_hat/sqrt(v_hat) = g/|g| = sign(g), so
  // |delta| = lr whatever the gradient's scale (Kingma & Ba 2015, Sec. 2.1).
  cpu::AdamWConfig config{.lr = 0.01f, .weight_decay = 0.0f};
  std::vector<float> p = {1.0f, -2.0f, 3.0f}, g = {1e-3f, -50.0f, 7.0f}, m(3), v(3);
  cpu::adamw_step(p.data(), g.data(), m.data(), v.data(), 3, 1, config);
  EXPECT_NEAR(p[0], 0.99f, 1e-5f);
  EXPECT_NEAR(p[1], -1.99f, 1e-5f);
  EXPECT_NEAR(p[2], 2.99f, 1e-5f);
}

TEST(AdamW, DecayIsDecoupledFromTheGradient) {
  // With g = 0 the moments stay zero and only the decay term acts: theta *= 1 - lr*lambda
  // (Algorithm 2, line 12), unlike L2 regularization, which Adam would rescale by 1/sqrt(v).
  cpu::AdamWConfig config{.lr = 0.1f, .weight_decay = 0.5f};
  float theta = 2.0f, g = 0.0f, m = 0.0f, v = 0.0f;
  cpu::adamw_step(&theta, &g, &m, &v, 1, 1, config);
  EXPECT_NEAR(theta, 2.0f * (1 - 0.05f), 1e-6f);
}

TEST(Sgd, MomentumMatchesPyTorchRecurrenceByHand) {
  // buf_1 = g = 1, p = 1 - 0.1*1 = 0.9; buf_2 = 0.9*1 + 1 = 1.9, p = 0.9 - 0.19 = 0.71
  // (torch.optim.SGD docs, dampening 0).
  cpu::SgdConfig config{.lr = 0.1f, .momentum = 0.9f};
  float p = 1.0f, g = 1.0f, buf = 0.0f;
  cpu::sgd_step(&p, &g, &buf, 1, config);
  EXPECT_NEAR(p, 0.9f, 1e-7f);
  cpu::sgd_step(&p, &g, &buf, 1, config);
  EXPECT_NEAR(buf, 1.9f, 1e-6f);
  EXPECT_NEAR(p, 0.71f, 1e-6f);
}

TEST(Sgd, PlainStepWithWeightDecay) {
  // g' = 0.5 + 0.1*1 = 0.6, p = 1 - 0.1*0.6 = 0.94.
  cpu::SgdConfig config{.lr = 0.1f, .momentum = 0.0f, .weight_decay = 0.1f};
  float p = 1.0f, g = 0.5f;
  cpu::sgd_step(&p, &g, nullptr, 1, config);
  EXPECT_NEAR(p, 0.94f, 1e-7f);
}

}  // namespace
}  // namespace twinsim::kernels::testing
