#pragma once
// Online-softmax bookkeeping shared by the flash-attention and cross-entropy kernels.
#include <cmath>

#include "kernels/common/hd.hpp"

namespace twinsim::kernels {

// Running max m and running sum l = sum exp(s - m) of one softmax row, updated one
// block at a time (Milakov & Gimelshein 2018 "Online normalizer calculation for
// softmax", Alg. 3; Dao et al. 2022 "FlashAttention", Alg. 1 lines 10-12).
struct OnlineSoftmax {
  float max = -INFINITY;
  float sum = 0.0f;
};

// Factor by which everything accumulated under the old max must be scaled once the
// max grows to new_max: exp(old_max - new_max). An empty row (old max -inf) scales by 0.
TWINSIM_HD inline float online_softmax_rescale(float old_max, float new_max) {
  return old_max == -INFINITY ? 0.0f : expf(old_max - new_max);
}

// log(sum_j exp(s_j)) of a finished row = m + log(l): the one number per row that
// FlashAttention saves for the backward (Dao 2023 "FlashAttention-2", Alg. 1 line 13).
TWINSIM_HD inline float online_softmax_logsumexp(const OnlineSoftmax& row) {
  return row.max + logf(row.sum);
}

// dS = P * (dP - D), D = rowsum(dO * O) = rowsum(P * dP): the softmax backward
// (FlashAttention-2, Alg. 2 lines 11 and 20).
TWINSIM_HD inline float softmax_backward_element(float p, float dp, float row_dot) {
  return p * (dp - row_dot);
}

}  // namespace twinsim::kernels
