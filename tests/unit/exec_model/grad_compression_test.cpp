// The executor's gradient compression (exec/train/grad_compression.hpp): the block
// quantiser by hand, and error feedback's promise: what was not sent is sent later, so the
// sum of what a rank sends over K steps stays within one rounding of K times its gradient.
#include "exec/train/grad_compression.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "exec/cpu/tracked_allocator.hpp"
#include "exec/train/quantized_exchange.hpp"

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
  std::vector<float> two(static_cast<std::size_t>(kGradQuantBlock) + 1, 100.0f);
  two.back() = 0.001f;
  quantize_dequantize(two.data(), two.data(), two.size(), GradCompression::int8);
  EXPECT_FLOAT_EQ(two.back(), 0.001f);
}

TEST(GradCompression, TopKKeepsTheLargestMagnitudes) {
  // 10 values, ratio 0.2: ceil(2) kept, -9 and 8 (the largest |x|), the rest 0; ratio 0.25
  // keeps ceil(2.5) = 3; a tie goes to the lower index
  const std::vector<float> in{1, -9, 3, 8, 0, -2, 7, 0.5f, 4, 6};
  std::vector<float> out(in.size());
  quantize_dequantize(in.data(), out.data(), in.size(), GradCompression::topk, 0.2);
  EXPECT_EQ(out, (std::vector<float>{0, -9, 0, 8, 0, 0, 0, 0, 0, 0}));
  quantize_dequantize(in.data(), out.data(), in.size(), GradCompression::topk, 0.25);
  EXPECT_EQ(out, (std::vector<float>{0, -9, 0, 8, 0, 0, 7, 0, 0, 0}));
  const std::vector<float> tie{5, -5, 1};
  std::vector<float> one(3);
  quantize_dequantize(tie.data(), one.data(), 3, GradCompression::topk, 0.3);
  EXPECT_EQ(one, (std::vector<float>{5, 0, 0}));
}

TEST(GradCompression, TopKErrorFeedbackSendsEveryValueInTurn) {
  // ratio 0.25 of 4 equal values: one a step; the residual of the others grows until each
  // is the largest and goes out: over 4 steps every value is sent once, 4 times its size
  TrackedAllocator allocator;
  set_model_allocator(&allocator);
  {
    GradCompressor compressor(GradCompression::topk, 4, 0.25);
    std::vector<double> sent(4, 0.0);
    for (int k = 0; k < 4; ++k) {
      std::vector<float> x{1, 1, 1, 1};
      compressor.compress(x.data(), 4);
      int nonzero = 0;
      for (int i = 0; i < 4; ++i) sent[i] += x[i], nonzero += x[i] != 0;
      EXPECT_EQ(nonzero, 1);
    }
    // step k sends the one value held back longest: k + 1 units of it
    EXPECT_EQ(sent, (std::vector<double>{1, 2, 3, 4}));
  }
  set_model_allocator(nullptr);
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

// The wire form (quantized_exchange.hpp): a packed chunk carries exactly what the in-place
// quantiser gives back, in the simulator's bytes. 2,049 values are two blocks (two scales):
// int8 2,049 + 8 bytes (1,029 words), int4 ceil(2,049 / 2) + 8 = 1,033 bytes (517 words).
TEST(GradCompression, APackedChunkDequantisesToTheQuantisersValues) {
  std::vector<float> in(2049);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = 0.003f * std::sin(0.1f * static_cast<float>(i)) - 0.0004f;
  in[2048] = -0.5f;  // the second block: one value, its own scale
  EXPECT_EQ(quantized_chunk_words(GradCompression::int8, in.size()), 1029u);
  EXPECT_EQ(quantized_chunk_words(GradCompression::int4, in.size()), 517u);
  for (GradCompression kind : {GradCompression::int8, GradCompression::int4}) {
    std::vector<unsigned char> wire(2 * quantized_chunk_words(kind, in.size()));
    pack_quantized(in.data(), in.size(), kind, wire.data());
    std::vector<float> got(in.size(), 1.0f), want(in.size());
    add_dequantized(wire.data(), in.size(), kind, got.data());  // onto 1.0: added, not written
    quantize_dequantize(in.data(), want.data(), in.size(), kind);
    for (std::size_t i = 0; i < in.size(); ++i) ASSERT_FLOAT_EQ(got[i], 1.0f + want[i]) << i;
    EXPECT_FLOAT_EQ(got[2048], 0.5f);  // -0.5 exactly: the step of its block's absmax
  }
}

// The compressor's blocks restart at each rank's chunk, where the exchange cuts the buffer:
// 3 values in chunks of 2, the second chunk's small value keeps its own scale (0.001 / 127
// a step) where one run of blocks would round it to 0 against 100's.
TEST(GradCompression, BlocksRestartAtEachChunk) {
  TrackedAllocator allocator;
  set_model_allocator(&allocator);
  {
    GradCompressor compressor(GradCompression::int8, 3);
    std::vector<float> g{100.0f, 1.0f, 0.001f};
    compressor.compress(g.data(), g.size(), 2);
    EXPECT_FLOAT_EQ(g[2], 0.001f);
    std::vector<float> whole{100.0f, 1.0f, 0.001f};
    GradCompressor one_run(GradCompression::int8, 3);
    one_run.compress(whole.data(), whole.size());
    EXPECT_EQ(whole[2], 0.0f);
  }
  set_model_allocator(nullptr);
}

}  // namespace
}  // namespace twinsim::exec
