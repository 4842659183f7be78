// The decode GEMM points of the memory sweep (calibrate/compute_bench.hpp
// add_decode_gemm_points, issue 61): below the projections' weights, 4-row calls against the
// small ones, so that the "gemm" curve's smallest point is no 1-row (matrix-vector) call.
#include <gtest/gtest.h>

#include "calibrate/compute_bench.hpp"
#include "models/layer_ops.hpp"

namespace twinsim::calibrate {
namespace {

TEST(DecodeGemmPoints, SmallWeightsAreTimedAtFourRowsBelowEveryOneRowPoint) {
  SweepOptions o;
  o.repeats = 1;
  o.min_repeat_s = 1e-4;
  o.cache_bytes = 0;  // "gemm_cached" with no warm set measured: one set each, a quick test
  std::vector<MemoryPoint> p;
  add_decode_gemm_points(p, o, true);
  // 1, 4 and 16 rows against 10 projection weights, then 4 rows against 6 small ones
  ASSERT_EQ(p.size(), 36u);
  for (const MemoryPoint& m : p) EXPECT_EQ(m.kernel, kGemmCachedKernel);
  // bytes = 4 B x (4 k + n k + 4 n) for an n-output, k-input weight at 4 rows:
  // expert w1/w3 64 x 256: 4 (1024 + 16384 + 256) = 70,656; w2 256 x 64 the same;
  // q_down 96 x 256: 4 (1024 + 24576 + 384) = 103,936; q_up 192 x 96: 4 (384 + 18432 + 768)
  // = 78,336; kv_down 80 x 256: 4 (1024 + 20480 + 320) = 87,296; router 8 x 256:
  // 4 (1024 + 2048 + 32) = 12,416
  const double small[] = {70656, 70656, 103936, 78336, 87296, 12416};
  for (int i = 0; i < 6; ++i) EXPECT_DOUBLE_EQ(p[30 + i].bytes, small[i]) << i;
  // the smallest 1-row point: 256 x 128 at 1 row, 4 (128 + 32768 + 256) = 132,608 B; every
  // small point lies below it, so the curve no longer holds its matrix-vector rate below
  EXPECT_DOUBLE_EQ(p[7].bytes, 132608.0);
  for (int i = 0; i < 6; ++i) EXPECT_LT(p[30 + i].bytes, p[7].bytes);
  o.quick = true;  // quick: one 4-row projection only
  std::vector<MemoryPoint> q;
  add_decode_gemm_points(q, o, true);
  EXPECT_EQ(q.size(), 1u);
}

}  // namespace
}  // namespace twinsim::calibrate
