// 16-bit storage rounding against hand-worked IEEE cases (the conversions themselves, and
// against the compiler's _Float16: tests/unit/kernels/storage_test.cpp); the cast of fp32
// masters into 16-bit weights; the dynamic loss scaler's skip/halve/grow rule
// (Micikevicius et al. 2018 §3.2).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "exec/train/mixed_precision.hpp"
#include "kernels/common/storage.hpp"

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

// The cast-on-copy into 16-bit storage rounds each master value once, to the same
// number round_to_storage gives the fp32 copy.
TEST(ExecMixedPrecision, StoreRoundedRoundsEachValueOnce) {
  std::mt19937 gen(5);
  std::normal_distribution<float> normal(0.0f, 100.0f);
  std::vector<float> master(1000);
  for (float& x : master) x = normal(gen);
  std::vector<float> bf16_rounded = master, fp16_rounded = master;
  round_to_storage(Dtype::bf16, bf16_rounded.data(), master.size());
  round_to_storage(Dtype::fp16, fp16_rounded.data(), master.size());
  EXPECT_NE(bf16_rounded, master);  // the data needed rounding
  std::vector<kernels::bf16> b(master.size());
  std::vector<kernels::fp16> h(master.size());
  std::vector<float> f(master.size());
  store_rounded(master.data(), b.data(), master.size());
  store_rounded(master.data(), h.data(), master.size());
  store_rounded(master.data(), f.data(), master.size());
  EXPECT_EQ(f, master);
  for (std::size_t i = 0; i < master.size(); ++i) {
    EXPECT_EQ(kernels::to_float(b[i]), bf16_rounded[i]);
    EXPECT_EQ(kernels::to_float(h[i]), fp16_rounded[i]);
  }
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
  std::vector<kernels::fp16> h = {kernels::to_fp16(1.0f), kernels::to_fp16(60000.0f)};
  EXPECT_FALSE(has_inf_or_nan(h.data(), h.size()));
  h[1] = kernels::to_fp16(70000.0f);  // beyond fp16's range: inf
  EXPECT_TRUE(has_inf_or_nan(h.data(), h.size()));
  std::vector<float> v = {1.0f, 2.0f, 3.0f};
  EXPECT_FALSE(has_inf_or_nan(v.data(), v.size()));
  v[1] = NAN;
  EXPECT_TRUE(has_inf_or_nan(v.data(), v.size()));
  v[1] = -INFINITY;
  EXPECT_TRUE(has_inf_or_nan(v.data(), v.size()));
}

}  // namespace
}  // namespace twinsim::exec
