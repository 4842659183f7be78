// 16-bit storage rounding against hand-worked IEEE cases and the compiler's own _Float16
// conversion; the dynamic loss scaler's skip/halve/grow rule (Micikevicius et al. 2018 §3.2).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "exec/train/mixed_precision.hpp"

namespace twinsim::exec {
namespace {

TEST(ExecMixedPrecision, Bf16RoundsToNearestEven) {
  EXPECT_EQ(round_to_bf16(1.0f), 1.0f);
  // bf16 keeps 7 mantissa bits: spacing 2^-7 at 1
  EXPECT_EQ(round_to_bf16(1.0f + std::ldexp(1.0f, -8)), 1.0f);  // tie -> even (1.0)
  EXPECT_EQ(round_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 1.0f + std::ldexp(1.0f, -6));  // tie -> even
  EXPECT_EQ(round_to_bf16(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -12)), 1.0f + std::ldexp(1.0f, -7));
  EXPECT_EQ(round_to_bf16(-3.0f), -3.0f);
  EXPECT_TRUE(std::isinf(round_to_bf16(INFINITY)));
  EXPECT_TRUE(std::isnan(round_to_bf16(NAN)));
}

TEST(ExecMixedPrecision, Fp16HandWorkedCases) {
  EXPECT_EQ(round_to_fp16(65504.0f), 65504.0f);  // largest fp16
  EXPECT_EQ(round_to_fp16(65519.0f), 65504.0f);
  EXPECT_TRUE(std::isinf(round_to_fp16(65520.0f)));  // the tie rounds up to 2^16: overflow
  EXPECT_EQ(round_to_fp16(1.0f + std::ldexp(1.0f, -11)), 1.0f);  // tie -> even
  EXPECT_EQ(round_to_fp16(std::ldexp(1.0f, -24)), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(round_to_fp16(std::ldexp(1.0f, -25)), 0.0f);  // tie -> even (0)
  EXPECT_EQ(round_to_fp16(3 * std::ldexp(1.0f, -25)), std::ldexp(1.0f, -23));
}

#ifdef __FLT16_MAX__
TEST(ExecMixedPrecision, Fp16MatchesTheCompilersConversion) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> exponent(-26.0f, 17.0f);
  for (int i = 0; i < 20000; ++i) {
    const float x = (i % 2 ? -1.0f : 1.0f) * std::exp2(exponent(rng));
    const float expected = static_cast<float>(static_cast<_Float16>(x));
    EXPECT_EQ(round_to_fp16(x), expected) << x;
  }
}
#endif

// The one-pass cast-on-copy equals a copy then rounding in place, for each storage type.
TEST(ExecMixedPrecision, StoreRoundedEqualsCopyThenRound) {
  std::mt19937 gen(5);
  std::normal_distribution<float> normal(0.0f, 100.0f);
  std::vector<float> master(1000);
  for (float& x : master) x = normal(gen);
  for (Dtype d : {Dtype::fp32, Dtype::bf16, Dtype::fp16}) {
    std::vector<float> want = master, got(master.size(), -1.0f);
    round_to_storage(d, want.data(), want.size());
    store_rounded(d, master.data(), got.data(), got.size());
    EXPECT_EQ(got, want) << to_string(d);
  }
  std::vector<float> rounded = master;
  round_to_storage(Dtype::bf16, rounded.data(), rounded.size());
  EXPECT_NE(rounded, master);  // the data needed rounding
}

TEST(ExecMixedPrecision, LossScalerSkipsHalvesAndGrows) {
  LossScaler s(1024.0f, 2);
  EXPECT_FALSE(s.update(true));  // overflow: skip, halve
  EXPECT_EQ(s.scale(), 512.0f);
  EXPECT_TRUE(s.update(false));
  EXPECT_EQ(s.scale(), 512.0f);
  EXPECT_TRUE(s.update(false));  // second clean step in the window: double
  EXPECT_EQ(s.scale(), 1024.0f);
  EXPECT_EQ(s.skipped_steps(), 1);
}

TEST(ExecMixedPrecision, FindsInfAndNan) {
  std::vector<float> v = {1.0f, 2.0f, 3.0f};
  EXPECT_FALSE(has_inf_or_nan(v.data(), v.size()));
  v[1] = NAN;
  EXPECT_TRUE(has_inf_or_nan(v.data(), v.size()));
  v[1] = -INFINITY;
  EXPECT_TRUE(has_inf_or_nan(v.data(), v.size()));
}

}  // namespace
}  // namespace twinsim::exec
