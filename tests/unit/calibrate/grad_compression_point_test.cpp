// The "quantize" point of the memory sweep (calibrate/compute_bench.hpp compressed_grads,
// issue 61): int8 compression timed on a backward's gradients. The step points before it
// zero their grads, and on zeros every block's scale is 0, so the compression skipped its
// per-value divide and round and calibrated ~1.5x fast.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "calibrate/compute_bench.hpp"
#include "exec/train/grad_compression.hpp"
#include "models/quantized_grads.hpp"

namespace twinsim::calibrate {
namespace {

TEST(GradCompressionPoint, GradientsReachTheDivideAndRoundInEveryBlock) {
  constexpr std::size_t kBlocks = 4, n = kBlocks * static_cast<std::size_t>(kGradQuantBlock);
  std::vector<float> g = compressed_grads(n);
  ASSERT_EQ(g.size(), n);
  for (std::size_t b = 0; b < kBlocks; ++b)
    EXPECT_GT(exec::block_scale(g.data() + b * kGradQuantBlock, kGradQuantBlock, GradCompression::int8), 0.0f) << b;
  exec::GradCompressor c(GradCompression::int8, n);
  c.compress(g.data(), n);
  // N(0, s^2) over a 2,048-value block: absmax ~3.5 s, scale = absmax / 127 ~0.028 s; a
  // value rounds to step 0 when |x| < scale / 2 ~0.014 s, P = 2 Phi(0.014) - 1 ~1.1%, so
  // ~99% of the sent values are non-zero steps (90% leaves room for the sample's absmax)
  const auto nonzero = static_cast<std::size_t>(std::count_if(g.begin(), g.end(), [](float v) { return v != 0.0f; }));
  EXPECT_GT(nonzero, n * 9 / 10);
  // the zeroed buffer the point used to compress: scale 0, every step 0, nothing divided
  std::vector<float> zeros(n, 0.0f);
  EXPECT_EQ(exec::block_scale(zeros.data(), kGradQuantBlock, GradCompression::int8), 0.0f);
}

}  // namespace
}  // namespace twinsim::calibrate
