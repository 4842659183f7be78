#include "sim/cost/collective_sweep.hpp"

#include <gtest/gtest.h>

#include "tests/unit/cost/test_hardware.hpp"

namespace twinsim {
namespace {

TEST(CollectiveSweep, NcclTestsColumns) {
  const ClusterSpec dgx = test::dgx_a100(1);
  const auto rows = collective_sweep(dgx, CollectiveOp::all_gather, packed_group(dgx, 8));
  ASSERT_EQ(rows.size(), 31u);  // 8 B, 16 B, ..., 8 GiB = 2^3 .. 2^33
  EXPECT_EQ(rows.front().bytes, 8);
  EXPECT_EQ(rows.back().bytes, 8.0 * (1 << 30));
  for (const SweepRow& r : rows) {
    EXPECT_NEAR(r.algbw_GBps, r.bytes / r.time_s / 1e9, 1e-9 * r.algbw_GBps);
    EXPECT_NEAR(r.busbw_GBps, r.algbw_GBps * 7.0 / 8, 1e-9 * r.algbw_GBps);
  }
  // busbw climbs toward the NVLink rate: ~240 GB/s at 8 GiB
  EXPECT_GT(rows.back().busbw_GBps, 200);
  EXPECT_LT(rows.front().busbw_GBps, 0.01);
}

TEST(CollectiveSweep, SendRecvBusEqualsAlgAndFactorFour) {
  const ClusterSpec cluster = test::dgx_a100(2);
  const auto rows = collective_sweep(cluster, CollectiveOp::send_recv, GroupLayout{2, 1}, 1024, 1 << 20, 4);
  ASSERT_EQ(rows.size(), 6u);  // 1 KiB, 4 KiB, ..., 1 MiB
  for (const SweepRow& r : rows) EXPECT_DOUBLE_EQ(r.busbw_GBps, r.algbw_GBps);
  EXPECT_THROW(collective_sweep(cluster, CollectiveOp::send_recv, GroupLayout{2, 1}, 16, 8), std::invalid_argument);
}

}  // namespace
}  // namespace twinsim
