#include "kernels/cpu/loss.hpp"

#include <cmath>

#include "tests/unit/kernels/kernel_test_util.hpp"

namespace twinsim::kernels::testing {
namespace {

// mean over tokens of -log(exp(z_target) / sum_j exp(z_j)), in double.
double naive_cross_entropy(const std::vector<double>& logits, const std::vector<int>& targets,
                           int vocab) {
  double total = 0;
  int tokens = static_cast<int>(targets.size());
  for (int t = 0; t < tokens; ++t) {
    double sum = 0;
    for (int j = 0; j < vocab; ++j) sum += std::exp(logits[t * vocab + j]);
    total += -std::log(std::exp(logits[t * vocab + targets[t]]) / sum);
  }
  return total / tokens;
}

TEST(CrossEntropy, UniformLogitsGiveLogVocab) {
  // A uniform prediction over V classes costs log V nats whatever the target.
  int tokens = 3, vocab = 50;
  std::vector<float> logits(tokens * vocab, 4.0f), lse(tokens);
  std::vector<int> targets = {0, 17, 49};
  float loss = cpu::cross_entropy_forward(logits.data(), targets.data(), lse.data(), tokens, vocab);
  EXPECT_NEAR(loss, std::log(50.0), 1e-5);
  EXPECT_NEAR(lse[0], 4.0 + std::log(50.0), 1e-5);
}

TEST(CrossEntropy, ForwardMatchesNaiveAndSurvivesLargeLogits) {
  int tokens = 4, vocab = 11;
  auto logits = random_vector(tokens * vocab, 1, -3, 3);
  std::vector<int> targets = {3, 0, 10, 5};
  std::vector<float> lse(tokens);
  float loss = cpu::cross_entropy_forward(logits.data(), targets.data(), lse.data(), tokens, vocab);
  EXPECT_NEAR(loss, naive_cross_entropy(to_double(logits), targets, vocab), 1e-5);
  // Shifting every logit by 1000 overflows a naive exp in fp32 but leaves the loss unchanged.
  for (auto& z : logits) z += 1000.0f;
  float shifted = cpu::cross_entropy_forward(logits.data(), targets.data(), lse.data(), tokens, vocab);
  EXPECT_NEAR(shifted, loss, 1e-3);
}

TEST(CrossEntropy, BackwardMatchesFiniteDifferencesAndWorksInPlace) {
  int tokens = 3, vocab = 7;
  auto logits = random_vector(tokens * vocab, 2, -2, 2);
  std::vector<int> targets = {6, 2, 0};
  std::vector<float> lse(tokens), dlogits(logits.size());
  cpu::cross_entropy_forward(logits.data(), targets.data(), lse.data(), tokens, vocab);
  float dloss = 1.5f;
  cpu::cross_entropy_backward(logits.data(), targets.data(), lse.data(), dloss, dlogits.data(),
                              tokens, vocab);
  auto loss = [&](const std::vector<double>& z) { return dloss * naive_cross_entropy(z, targets, vocab); };
  expect_all_near(dlogits, numeric_gradient(loss, to_double(logits)), 1e-6, 1e-4, "dlogits");

  auto in_place = logits;
  cpu::cross_entropy_backward(in_place.data(), targets.data(), lse.data(), dloss, in_place.data(),
                              tokens, vocab);
  expect_all_near(in_place, dlogits, 0, 0, "in place");
}

}  // namespace
}  // namespace twinsim::kernels::testing
