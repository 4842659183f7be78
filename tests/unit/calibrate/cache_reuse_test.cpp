// The reuse sweep's points, the working sets interleaved on a shared pace
// (calibrate/cache_reuse.hpp reuse_points, issue 61).
#include <gtest/gtest.h>

#include "calibrate/cache_reuse.hpp"
#include "calibrate/samples.hpp"

namespace twinsim::calibrate {
namespace {

TEST(ReusePoints, OnePointPerSetOfWholeMatricesEachTimedEveryRepeat) {
  SweepOptions o;
  o.repeats = 3;
  o.min_repeat_s = 1e-3;
  // one matrix is 1024 x 256 fp32 = 1,048,576 B: 0.4 MiB rounds up to one matrix (at least
  // one), 2 MiB is two, 2.6 MiB rounds to three
  const ReusePace pace = reuse_pace(o);
  EXPECT_DOUBLE_EQ(pace.slot_s, 1.5e-3);  // kReuseSlotsPerRepeat (1.5) x min_repeat_s
  const std::vector<MemoryPoint> p = reuse_points({0.4, 2, 2.6}, o, pace);
  ASSERT_EQ(p.size(), 3u);
  const double expected_bytes[] = {1048576.0, 2097152.0, 3145728.0};
  for (std::size_t i = 0; i < p.size(); ++i) {
    EXPECT_EQ(p[i].kernel, kGemmReuseKernel);
    EXPECT_DOUBLE_EQ(p[i].bytes, expected_bytes[i]);
    EXPECT_EQ(p[i].seconds.repeats, 3);  // one slot a repeat: 3 x 3 slots in all
    EXPECT_GT(p[i].seconds.min, 0.0);
    EXPECT_LE(p[i].seconds.min, p[i].seconds.median);
    EXPECT_LE(p[i].seconds.median, p[i].seconds.max);
  }
}

// The rows points: 1, 2, 4, 8, 16 rows of the reuse GEMM (1024 x 256 weights), each timed in
// every repeat; their bytes give back their rows (the curve's sizes), and 4 rows over itself is 1.
// Quick mode measures 4 rows only, which makes no curve.
TEST(ReusePoints, RowsPointsTimeEachRowCountEveryRepeat) {
  SweepOptions o;
  o.repeats = 3;
  o.min_repeat_s = 1e-3;
  const std::vector<MemoryPoint> p = rows_points(o);
  ASSERT_EQ(p.size(), 5u);
  for (const MemoryPoint& m : p) {
    EXPECT_EQ(m.kernel, kGemmRowsKernel);
    EXPECT_EQ(m.seconds.repeats, 3);
    EXPECT_GT(m.seconds.min, 0.0);
  }
  const std::vector<CurvePoint> curve = rows_time_curve(p);
  ASSERT_EQ(curve.size(), 5u);
  const double rows[] = {1, 2, 4, 8, 16};
  for (std::size_t i = 0; i < curve.size(); ++i) EXPECT_DOUBLE_EQ(curve[i].size, rows[i]);
  EXPECT_DOUBLE_EQ(curve[2].efficiency, 1.0);
  o.quick = true;
  EXPECT_EQ(rows_points(o).size(), 1u);
}

}  // namespace
}  // namespace twinsim::calibrate
