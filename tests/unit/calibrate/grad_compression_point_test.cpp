// The "quantize" and "dequantize" points of the memory sweep (calibrate/compute_bench.hpp compressed_grads,
// issue 61): int8 compression timed on a backward's gradients. The step points before it
// zero their grads, and on zeros every block's scale is 0, so the compression skipped its
// per-value divide and round and calibrated ~1.5x fast.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "calibrate/compute_bench.hpp"
#include "exec/train/grad_compression.hpp"
#include "exec/train/quantized_exchange.hpp"
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

// The "dequantize" point adds packed_grads' blocks: real int8 blocks, each scale > 0, whose
// dequantised values are the grads to within half a step and mostly nonzero.
TEST(GradCompressionPoint, TheDequantizePointAddsRealInt8Blocks) {
  constexpr std::size_t kBlocks = 4, n = kBlocks * static_cast<std::size_t>(kGradQuantBlock);
  const std::vector<unsigned char> wire = packed_grads(n);
  // 4 fp32 scales, then one int8 step a value (models/quantized_grads.hpp), in 16-bit words
  ASSERT_EQ(wire.size(), 4 * kBlocks + n);
  const std::vector<float> g = compressed_grads(n);
  std::vector<float> sum(n, 0.0f);
  exec::add_dequantized(wire.data(), n, GradCompression::int8, sum.data());
  for (std::size_t b = 0; b < kBlocks; ++b) {
    float scale = 0;
    std::memcpy(&scale, wire.data() + 4 * b, sizeof scale);
    // the block's absmax over 127 (int8 steps -127..127): ~3.5 x 0.01 / 127
    ASSERT_GT(scale, 0.0f) << b;
    for (std::size_t i = b * kGradQuantBlock; i < (b + 1) * kGradQuantBlock; ++i)
      ASSERT_LE(std::abs(sum[i] - g[i]), scale / 2 * 1.0001f) << i;
  }
  // ~99% nonzero steps, as the compression's (the test above derives it)
  const auto nonzero =
      static_cast<std::size_t>(std::count_if(sum.begin(), sum.end(), [](float v) { return v != 0.0f; }));
  EXPECT_GT(nonzero, n * 9 / 10);
}

}  // namespace
}  // namespace twinsim::calibrate
