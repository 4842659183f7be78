// The executor's gradient compression (exec/train/grad_compression.hpp): the block
// quantiser by hand, and error feedback's promise: what was not sent is sent later, so the
// sum of what a rank sends over K steps stays within one rounding of K times its gradient.
#include "exec/train/grad_compression.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "exec/runtime/tracked_allocator.hpp"

namespace twinsim::exec {
namespace {

TEST(GradCompression, QuantisesBlocksToTheirOwnScale) {
  // one block: absmax 2.54, int8 scale 0.02: 1.0 -> 50 steps exactly, 0.013 -> 0.02 (0.65 rounds up)
  std::vector<float> in{2.54f, 1.0f, 0.013f, -0.009f, 0.0f};
  std::vector<float> out(in.size());
  quantize_dequantize(in.data(), out.data(), in.size(), GradCompression::int8);
  EXPECT_FLOAT_EQ(out[0], 2.54f);
  EXPECT_NEAR(out[1], 1.0f, 1e-6);
  EXPECT_NEAR(out[2], 0.02f, 1e-7);
  EXPECT_NEAR(out[3], -0.0f, 1e-7);  // 0.45 of a step rounds to 0
  EXPECT_EQ(out[4], 0.0f);
  // int4: scale 2.54 / 7; 1.0 is 2.76 steps -> 3 steps = 1.0886
  quantize_dequantize(in.data(), out.data(), in.size(), GradCompression::int4);
  EXPECT_NEAR(out[1], 3 * 2.54f / 7, 1e-6);
  // a second block keeps its own scale: a small value after 2,048 large ones survives
  std::vector<float> two(kGradQuantBlock + 1, 100.0f);
  two.back() = 0.001f;
  quantize_dequantize(two.data(), two.data(), two.size(), GradCompression::int8);
  EXPECT_FLOAT_EQ(two.back(), 0.001f);
}

TEST(GradCompression, ErrorFeedbackSendsWhatItHeldBack) {
  TrackedAllocator allocator;
  set_model_allocator(&allocator);
  {
    const std::size_t n = 3000;  // two blocks
    std::vector<float> g(n);
    for (std::size_t i = 0; i < n; ++i) g[i] = std::sin(0.37f * static_cast<float>(i)) * (i % 7 == 0 ? 1.0f : 0.01f);
    for (GradCompression kind : {GradCompression::int8, GradCompression::int4}) {
      GradCompressor compressor(kind, n);
      const int steps = 50;
      std::vector<double> sent(n, 0.0);
      for (int k = 0; k < steps; ++k) {
        std::vector<float> x = g;
        compressor.compress(x.data(), n);
        for (std::size_t i = 0; i < n; ++i) sent[i] += x[i];
      }
      const double step = kind == GradCompression::int8 ? 1.0 / 127 : 1.0 / 7;  // the blocks' absmax is ~1
      double worst = 0, without = 0;
      std::vector<float> once = g;
      quantize_dequantize(once.data(), once.data(), n, kind);
      for (std::size_t i = 0; i < n; ++i) {
        worst = std::max(worst, std::fabs(sent[i] - steps * static_cast<double>(g[i])));
        without = std::max(without, std::fabs(steps * static_cast<double>(once[i]) - steps * static_cast<double>(g[i])));
      }
      // within a step or so of the true sum (the residual of the last round, plus the
      // block scale's growth with it); without feedback the error grows with every round
      EXPECT_LT(worst, 1.5 * step) << static_cast<int>(kind);
      EXPECT_GT(without, 10 * worst) << static_cast<int>(kind);
    }
  }
  set_model_allocator(nullptr);
}

}  // namespace
}  // namespace twinsim::exec
