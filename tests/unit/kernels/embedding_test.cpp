#include "kernels/cpu/embedding.hpp"

#include "tests/unit/kernels/kernel_test_util.hpp"

namespace twinsim::kernels::testing {
namespace {

constexpr int kBatch = 2, kSeq = 3, kChannels = 4, kVocab = 5;

std::vector<double> naive_embedding(const std::vector<int>& tokens, const std::vector<double>& wte,
                                    const std::vector<double>* wpe) {
  std::vector<double> out(kBatch * kSeq * kChannels);
  for (int b = 0; b < kBatch; ++b)
    for (int s = 0; s < kSeq; ++s)
      for (int c = 0; c < kChannels; ++c) {
        int bs = b * kSeq + s;
        out[bs * kChannels + c] = wte[tokens[bs] * kChannels + c] + (wpe ? (*wpe)[s * kChannels + c] : 0.0);
      }
  return out;
}

// Token 1 appears three times, so its grad row sums three output grads.
const std::vector<int> kTokens = {1, 4, 1, 0, 1, 3};

TEST(Embedding, ForwardWithAndWithoutPositions) {
  auto wte = random_vector(kVocab * kChannels, 1), wpe = random_vector(kSeq * kChannels, 2);
  std::vector<float> out(kBatch * kSeq * kChannels);
  auto wte64 = to_double(wte), wpe64 = to_double(wpe);
  cpu::embedding_forward(kTokens.data(), wte.data(), wpe.data(), out.data(), kBatch, kSeq, kChannels);
  expect_all_near(out, naive_embedding(kTokens, wte64, &wpe64), 1e-6, 0, "with wpe");
  cpu::embedding_forward(kTokens.data(), wte.data(), nullptr, out.data(), kBatch, kSeq, kChannels);
  expect_all_near(out, naive_embedding(kTokens, wte64, nullptr), 0, 0, "no wpe");
}

TEST(Embedding, BackwardMatchesFiniteDifferencesAndAccumulates) {
  auto wte = random_vector(kVocab * kChannels, 3), wpe = random_vector(kSeq * kChannels, 4);
  auto dout = random_vector(kBatch * kSeq * kChannels, 5);
  std::vector<float> dwte(wte.size(), 0.0f), dwpe(wpe.size(), 0.0f);
  cpu::embedding_backward(dout.data(), kTokens.data(), dwte.data(), dwpe.data(), kBatch, kSeq, kChannels);
  auto wte64 = to_double(wte), wpe64 = to_double(wpe);
  auto lt = [&](const std::vector<double>& w) { return weighted_sum(naive_embedding(kTokens, w, &wpe64), dout); };
  auto lp = [&](const std::vector<double>& w) { return weighted_sum(naive_embedding(kTokens, wte64, &w), dout); };
  auto expected_dwte = numeric_gradient(lt, wte64), expected_dwpe = numeric_gradient(lp, wpe64);
  expect_all_near(dwte, expected_dwte, 1e-6, 1e-5, "dwte");
  expect_all_near(dwpe, expected_dwpe, 1e-6, 1e-5, "dwpe");
  // Token 2 never appears: its row stays zero.
  for (int c = 0; c < kChannels; ++c) EXPECT_EQ(dwte[2 * kChannels + c], 0.0f);
  // A second call adds (the caller zeroes once per step).
  cpu::embedding_backward(dout.data(), kTokens.data(), dwte.data(), nullptr, kBatch, kSeq, kChannels);
  for (auto& g : expected_dwte) g *= 2;
  expect_all_near(dwte, expected_dwte, 1e-6, 1e-5, "2 dwte");
}

}  // namespace
}  // namespace twinsim::kernels::testing
