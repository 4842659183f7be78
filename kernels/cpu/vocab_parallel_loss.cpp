#include "kernels/cpu/vocab_parallel_loss.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "kernels/common/loss_math.hpp"

namespace twinsim::kernels::cpu {

namespace {
const float* row_of(const float* logits, int t, int local_vocab) {
  return logits + static_cast<std::size_t>(t) * local_vocab;
}
}  // namespace

void vocab_parallel_row_max(const float* logits, float* row_max, int tokens, int local_vocab) {
  for (int t = 0; t < tokens; ++t) {
    const float* row = row_of(logits, t, local_vocab);
    row_max[t] = *std::max_element(row, row + local_vocab);
  }
}

void vocab_parallel_row_sums(const float* logits, const int* targets, const float* row_max, float* sums, int tokens,
                             int local_vocab, int vocab_start) {
  for (int t = 0; t < tokens; ++t) {
    const float* row = row_of(logits, t, local_vocab);
    double s = 0;  // exp(l - max) <= 1 each: a double sum keeps the vocabulary's 1e5 terms exact enough
    for (int j = 0; j < local_vocab; ++j) s += std::exp(static_cast<double>(row[j] - row_max[t]));
    sums[t] = static_cast<float>(s);
    const int j = targets[t] - vocab_start;
    sums[tokens + t] = j >= 0 && j < local_vocab ? row[j] : 0.0f;
  }
}

void vocab_parallel_loss(const float* row_max, const float* sums, float* lse, float* token_loss, int tokens) {
  for (int t = 0; t < tokens; ++t) {
    // log sum_j exp(l_j) = max + log sum_j exp(l_j - max)
    lse[t] = row_max[t] + std::log(sums[t]);
    token_loss[t] = lse[t] - sums[tokens + t];
  }
}

void vocab_parallel_loss_backward(const float* logits, const int* targets, const float* lse, float dloss,
                                  float* dlogits, int tokens, int local_vocab, int vocab_start) {
  const float scale = dloss / static_cast<float>(tokens);
  for (int t = 0; t < tokens; ++t) {
    const std::size_t row = static_cast<std::size_t>(t) * local_vocab;
    const int target = targets[t] - vocab_start;
    for (int j = 0; j < local_vocab; ++j)
      dlogits[row + j] = cross_entropy_dlogit(logits[row + j], lse[t], j == target, scale);
  }
}

}  // namespace twinsim::kernels::cpu
