#include "kernels/cpu/loss.hpp"

#include <cmath>

#include "kernels/common/loss_math.hpp"

namespace twinsim::kernels::cpu {

float cross_entropy_forward(const float* logits, const int* targets, float* logsumexp, int tokens,
                            int vocab) {
  double total = 0.0;
  for (int t = 0; t < tokens; ++t) {
    const float* row = logits + static_cast<long>(t) * vocab;
    // Subtract the row max before exp so large logits do not overflow.
    float row_max = row[0];
    for (int j = 1; j < vocab; ++j) row_max = std::fmax(row_max, row[j]);
    double sum = 0.0;
    for (int j = 0; j < vocab; ++j) sum += std::exp(row[j] - row_max);
    float lse = row_max + static_cast<float>(std::log(sum));
    logsumexp[t] = lse;
    total += lse - row[targets[t]];  // -log softmax = logsumexp - logit[target]
  }
  return static_cast<float>(total / tokens);
}

void cross_entropy_backward(const float* logits, const int* targets, const float* logsumexp,
                            float dloss, float* dlogits, int tokens, int vocab) {
  float scale = dloss / static_cast<float>(tokens);
  for (int t = 0; t < tokens; ++t) {
    long row = static_cast<long>(t) * vocab;
    for (int j = 0; j < vocab; ++j)
      dlogits[row + j] = cross_entropy_dlogit(logits[row + j], logsumexp[t], j == targets[t], scale);
  }
}

}  // namespace twinsim::kernels::cpu
