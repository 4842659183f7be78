// The vocabulary-parallel cross-entropy's stages (kernels/cpu/vocab_parallel_loss.hpp) on a
// vocabulary split over shards, the collectives done by hand between the stages (max, then
// sum), against a plain double softmax cross-entropy of the whole logits and its gradient.
#include "kernels/cpu/vocab_parallel_loss.hpp"

#include <algorithm>
#include <cmath>

#include "tests/unit/kernels/kernel_test_util.hpp"

namespace twinsim::kernels::testing {
namespace {

struct Shard {
  int start, size;
};

// The shards' logits [tokens, size], cut from the full [tokens, vocab].
std::vector<float> shard_logits(const std::vector<float>& full, int tokens, int vocab, Shard s) {
  std::vector<float> out;
  for (int t = 0; t < tokens; ++t)
    out.insert(out.end(), full.begin() + t * vocab + s.start, full.begin() + t * vocab + s.start + s.size);
  return out;
}

// Runs the stages on every shard with the all-reduces done here; returns each token's loss
// and fills each shard's dlogits (dloss = 1).
std::vector<float> run_sharded(const std::vector<float>& full, const std::vector<int>& targets, int vocab,
                               const std::vector<Shard>& shards, std::vector<std::vector<float>>& dlogits) {
  const int tokens = static_cast<int>(targets.size());
  std::vector<std::vector<float>> logits;
  for (Shard s : shards) logits.push_back(shard_logits(full, tokens, vocab, s));
  std::vector<float> row_max(tokens, -INFINITY), sums(2 * tokens, 0.0f), part(2 * tokens);
  for (std::size_t r = 0; r < shards.size(); ++r) {
    std::vector<float> mine(tokens);
    cpu::vocab_parallel_row_max(logits[r].data(), mine.data(), tokens, shards[r].size);
    for (int t = 0; t < tokens; ++t) row_max[t] = std::max(row_max[t], mine[t]);
  }
  for (std::size_t r = 0; r < shards.size(); ++r) {
    cpu::vocab_parallel_row_sums(logits[r].data(), targets.data(), row_max.data(), part.data(), tokens,
                                 shards[r].size, shards[r].start);
    for (int i = 0; i < 2 * tokens; ++i) sums[i] += part[i];
  }
  std::vector<float> lse(tokens), loss(tokens);
  cpu::vocab_parallel_loss(row_max.data(), sums.data(), lse.data(), loss.data(), tokens);
  dlogits.clear();
  for (std::size_t r = 0; r < shards.size(); ++r) {
    dlogits.emplace_back(logits[r].size());
    cpu::vocab_parallel_loss_backward(logits[r].data(), targets.data(), lse.data(), 1.0f, dlogits[r].data(), tokens,
                                      shards[r].size, shards[r].start);
  }
  return loss;
}

// Large logits (up to 60) too: exp would overflow float without the row maximum.
TEST(VocabParallelLoss, ShardsMatchThePlainSoftmaxCrossEntropyAndItsGradient) {
  const int tokens = 5, vocab = 13;
  const std::vector<float> full = random_vector(tokens * vocab, 3, -60.0f, 60.0f);
  const std::vector<int> targets{0, 12, 4, 5, 9};  // in the first, last and middle shards, at their edges
  const std::vector<Shard> shards{{0, 5}, {5, 4}, {9, 4}};
  std::vector<std::vector<float>> dlogits;
  const std::vector<float> loss = run_sharded(full, targets, vocab, shards, dlogits);
  for (int t = 0; t < tokens; ++t) {
    double m = -INFINITY, sum = 0;
    for (int j = 0; j < vocab; ++j) m = std::max(m, double(full[t * vocab + j]));
    for (int j = 0; j < vocab; ++j) sum += std::exp(full[t * vocab + j] - m);
    const double lse = m + std::log(sum);
    EXPECT_NEAR(loss[t], lse - full[t * vocab + targets[t]], 1e-4 * std::max(1.0, lse)) << t;
    for (std::size_t r = 0; r < shards.size(); ++r)
      for (int j = 0; j < shards[r].size; ++j) {
        const int v = shards[r].start + j;
        const double want = (std::exp(full[t * vocab + v] - lse) - (v == targets[t] ? 1.0 : 0.0)) / tokens;
        EXPECT_NEAR(dlogits[r][t * shards[r].size + j], want, 1e-6) << t << "," << v;
      }
  }
}

// One shard holding the whole vocabulary is the fused kernel's loss (kernels/cpu/loss.hpp).
TEST(VocabParallelLoss, OneShardSumsToTheWholeVocabularysLoss) {
  const int tokens = 4, vocab = 7;
  const std::vector<float> full = random_vector(tokens * vocab, 8, -3.0f, 3.0f);
  const std::vector<int> targets{6, 0, 3, 3};
  std::vector<std::vector<float>> one, three;
  const std::vector<float> whole = run_sharded(full, targets, vocab, {{0, vocab}}, one);
  const std::vector<float> split = run_sharded(full, targets, vocab, {{0, 2}, {2, 2}, {4, 3}}, three);
  for (int t = 0; t < tokens; ++t) EXPECT_NEAR(whole[t], split[t], 1e-5f) << t;
  // the gradient of each vocabulary entry is the same element formula on every split
  for (int t = 0; t < tokens; ++t)
    for (int v = 0; v < vocab; ++v) {
      const int r = v < 2 ? 0 : v < 4 ? 1 : 2, start = r == 0 ? 0 : r == 1 ? 2 : 4, size = r == 2 ? 3 : 2;
      EXPECT_NEAR(one[0][t * vocab + v], three[r][t * size + v - start], 1e-7f) << t << "," << v;
    }
}

}  // namespace
}  // namespace twinsim::kernels::testing
