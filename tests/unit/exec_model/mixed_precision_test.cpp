// 16-bit storage rounding in place and the cast of fp32 masters into 16-bit weights (the
// conversions themselves: tests/unit/kernels/storage_test.cpp); the dynamic loss scaler's skip/halve/grow rule
// (Micikevicius et al. 2018 §3.2).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "exec/train/mixed_precision.hpp"
#include "kernels/common/storage.hpp"

namespace twinsim::exec {
namespace {

// round_to_bf16 / round_to_fp16 are storage.hpp's conversions there and back (their
// cases: tests/unit/kernels/storage_test.cpp); round_to_storage applies them in place.
TEST(ExecMixedPrecision, RoundToStorageRoundsInPlaceAndLeavesFp32Alone) {
  std::vector<float> v = {1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -12), 65519.0f, -3.0f};
  std::vector<float> same = v;
  round_to_storage(Dtype::fp32, same.data(), same.size());
  EXPECT_EQ(same, v);
  std::vector<float> b = v, h = v;
  round_to_storage(Dtype::bf16, b.data(), b.size());
  round_to_storage(Dtype::fp16, h.data(), h.size());
  EXPECT_EQ(b[0], 1.0f + std::ldexp(1.0f, -7));
  EXPECT_EQ(h[1], 65504.0f);
  for (std::size_t i = 0; i < v.size(); ++i) {
    EXPECT_EQ(b[i], round_to_bf16(v[i]));
    EXPECT_EQ(h[i], round_to_fp16(v[i]));
  }
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
