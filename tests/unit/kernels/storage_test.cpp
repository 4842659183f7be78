// 16-bit storage conversions against hand-worked IEEE cases and the compiler's own
// _Float16, and every bf16 / fp16 bit pattern through float and back.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/common/storage.hpp"

namespace twinsim::kernels {
namespace {

float bf16_round(float x) { return to_float(to_bf16(x)); }
float fp16_round(float x) { return to_float(to_fp16(x)); }

TEST(KernelStorage, Bf16RoundsToNearestEven) {
  EXPECT_EQ(to_bf16(1.0f).bits, 0x3f80);
  EXPECT_EQ(bf16_round(1.0f + std::ldexp(1.0f, -8)), 1.0f);  // tie -> even
  EXPECT_EQ(bf16_round(1.0f + 3 * std::ldexp(1.0f, -8)), 1.0f + std::ldexp(1.0f, -6));  // tie -> even
  EXPECT_EQ(bf16_round(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -12)), 1.0f + std::ldexp(1.0f, -7));
  EXPECT_EQ(bf16_round(-3.0f), -3.0f);
  EXPECT_TRUE(std::isinf(bf16_round(INFINITY)));
  EXPECT_TRUE(std::isnan(bf16_round(NAN)));
  EXPECT_TRUE(std::isnan(bf16_round(bits_float(0x7f800001u))));  // a nan whose payload is in the low bits
}

TEST(KernelStorage, Fp16HandWorkedCases) {
  EXPECT_EQ(to_fp16(1.0f).bits, 0x3c00);
  EXPECT_EQ(to_fp16(-2.0f).bits, 0xc000);
  EXPECT_EQ(fp16_round(65504.0f), 65504.0f);  // largest fp16
  EXPECT_EQ(fp16_round(65519.0f), 65504.0f);
  EXPECT_TRUE(std::isinf(fp16_round(65520.0f)));  // the tie rounds up to 2^16: overflow
  EXPECT_EQ(fp16_round(1.0f + std::ldexp(1.0f, -11)), 1.0f);  // tie -> even
  EXPECT_EQ(fp16_round(std::ldexp(1.0f, -24)), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(fp16_round(std::ldexp(1.0f, -25)), 0.0f);  // tie -> even (0)
  EXPECT_EQ(fp16_round(3 * std::ldexp(1.0f, -25)), std::ldexp(1.0f, -23));
  EXPECT_EQ(fp16_round(std::ldexp(1.0f, -14) * (1 - std::ldexp(1.0f, -12))), std::ldexp(1.0f, -14));  // up to the smallest normal
  EXPECT_TRUE(std::isnan(fp16_round(NAN)));
}

TEST(KernelStorage, EveryPatternSurvivesTheRoundTrip) {
  for (std::uint32_t b = 0; b <= 0xffff; ++b) {
    const auto bits = static_cast<std::uint16_t>(b);
    const float h = to_float(fp16{bits}), g = to_float(bf16{bits});
    if (std::isnan(h)) EXPECT_TRUE(std::isnan(fp16_round(h))) << b;
    else EXPECT_EQ(to_fp16(h).bits, bits) << b;
    if (std::isnan(g)) EXPECT_TRUE(std::isnan(bf16_round(g))) << b;
    else EXPECT_EQ(to_bf16(g).bits, bits) << b;
  }
}

// The plain rounding the branch-free to_bf16 replaces: keep the top 16 bits, rounding the
// dropped 16 to nearest, ties to even; inf and nan pass (a nan keeps a mantissa bit).
float naive_bf16_round(float x) {
  std::uint32_t u = float_bits(x);
  if ((u & 0x7f800000u) == 0x7f800000u) return (u & 0x7fffffu) ? NAN : x;
  u += 0x7fffu + ((u >> 16) & 1u);
  return bits_float(u & 0xffff0000u);
}

// Every sign, exponent and top mantissa half of fp32 with low halves at and around the
// rounding ties of bf16 (bit 15) and fp16 (bit 12).
std::vector<float> tie_heavy_sweep() {
  std::vector<float> values;
  for (std::uint32_t high = 0; high < 65536; ++high)
    for (std::uint32_t low : {0x0000u, 0x0001u, 0x0fffu, 0x1000u, 0x1001u, 0x3000u, 0x7fffu, 0x8000u, 0x8001u,
                              0xb000u, 0xffffu})
      values.push_back(bits_float(high << 16 | low));
  return values;
}

TEST(KernelStorage, Bf16MatchesThePlainRoundingOverATieHeavySweep) {
  int mismatches = 0;
  for (float x : tie_heavy_sweep()) {
    const float want = naive_bf16_round(x), got = bf16_round(x);
    const bool same = std::isnan(want) ? std::isnan(got) : float_bits(got) == float_bits(want);
    if (!same && mismatches++ < 5) ADD_FAILURE() << std::hex << float_bits(x);
  }
}

#ifdef __FLT16_MAX__
TEST(KernelStorage, Fp16MatchesTheCompilersConversionOverATieHeavySweep) {
  int mismatches = 0;
  for (float x : tie_heavy_sweep()) {
    const float want = static_cast<float>(static_cast<_Float16>(x)), got = fp16_round(x);
    const bool same = std::isnan(want) ? std::isnan(got) : float_bits(got) == float_bits(want);
    if (!same && mismatches++ < 5) ADD_FAILURE() << std::hex << float_bits(x);
  }
}
#endif

#ifdef __FLT16_MAX__
TEST(KernelStorage, Fp16MatchesTheCompilersConversion) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> exponent(-26.0f, 17.0f);
  for (int i = 0; i < 100000; ++i) {
    const float x = (i % 2 ? -1.0f : 1.0f) * std::exp2(exponent(rng));
    const float expected = static_cast<float>(static_cast<_Float16>(x));
    EXPECT_EQ(fp16_round(x), expected) << x;
  }
}
#endif

}  // namespace
}  // namespace twinsim::kernels
