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

}  // namespace
}  // namespace twinsim::calibrate
