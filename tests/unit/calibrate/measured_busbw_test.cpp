// calibrate/measured_busbw: the collectives calibrate timed, written into the hardware file,
// must price back at the times measured (through the scenario loader and the simulator's
// collective cost), not at the GPU protocol model's.
#include <gtest/gtest.h>

#include <cmath>

#include "calibrate/measured_busbw.hpp"
#include "scenario/load.hpp"
#include "sim/cost/collective_cost.hpp"

namespace twinsim::calibrate {
namespace {

Stats median_of(double seconds) {
  Stats s;
  s.median = s.min = s.max = s.mean = seconds;
  s.repeats = 1;
  return s;
}

// The host's 2-rank figures of hardware/calibrated/host.json (2026-12-06) rounded, and one
// 4-rank all-reduce: what a file gets from a sweep.
std::vector<CommPoint> host_points() {
  return {{"all_reduce", 2, 4096, median_of(2.2e-6)},
          {"all_reduce", 2, 65536, median_of(19.85e-6)},
          {"all_gather", 2, 4096, median_of(1.1e-6)},
          {"send_recv", 2, 65536, median_of(11.35e-6)},
          {"all_reduce", 4, 4096, median_of(31.7e-6)}};
}

ClusterSpec cluster_with(const std::string& measured) {
  const std::string text =
      "model: tiny-llama\ncluster:\n  preset: host\n  intra_node:\n    bandwidth_GBps: 10.831\n"
      "    latency_us: 4.994\n" +
      measured + "inference: {prompt_len: 64, output_len: 32, batch: 4}\nplan: {tp: 2, pp: 1, dp: 1}\n";
  return load_scenario_text(text).cluster;
}

TEST(MeasuredBusbw, TheFilePricesEachCollectiveAtItsMeasuredTime) {
  const std::string yaml = measured_busbw_yaml(host_points(), "    ");
  ASSERT_NE(yaml.find("measured_busbw:"), std::string::npos);
  const ClusterSpec c = cluster_with(yaml);
  auto time = [&](CollectiveOp op, int ranks, double bytes) { return collective_time_s(c, op, {ranks, ranks}, bytes); };
  // at each measured size the call's own median (busbw printed to 6 digits: 1e-5 relative)
  EXPECT_NEAR(time(CollectiveOp::all_reduce, 2, 4096), 2.2e-6, 2.2e-11);
  EXPECT_NEAR(time(CollectiveOp::all_reduce, 2, 65536), 19.85e-6, 19.85e-11);
  EXPECT_NEAR(time(CollectiveOp::all_gather, 2, 4096), 1.1e-6, 1.1e-11);
  EXPECT_NEAR(time(CollectiveOp::send_recv, 2, 65536), 11.35e-6, 11.35e-11);
  EXPECT_NEAR(time(CollectiveOp::all_reduce, 4, 4096), 31.7e-6, 31.7e-11);
  // below the sweep the smallest size's time holds (a call's fixed cost): a 1 KiB all-reduce
  EXPECT_NEAR(time(CollectiveOp::all_reduce, 2, 1024), 2.2e-6, 2.2e-11);
  // half-way in log(bytes), 16 KiB: busbw half-way between 4096 / 2.2 us = 1.8618 GB/s and
  // 65536 / 19.85 us = 3.3016 GB/s (bus factor 1 on 2 ranks), 2.5817 GB/s: 16384 / 2.5817e9 = 6.346 us
  EXPECT_NEAR(time(CollectiveOp::all_reduce, 2, 16384), 6.346e-6, 0.002e-6);
  // without the measured times the protocol model prices it at NCCL's LL protocol, whose base
  // latency alone (3.6 us, tuning.cc) is more than the 2.2 us the call took
  EXPECT_GT(collective_time_s(cluster_with(""), CollectiveOp::all_reduce, {2, 2}, 4096), 3.6e-6);
}

TEST(MeasuredBusbw, PointsWithoutATimeAreLeftOut) {
  EXPECT_EQ(measured_busbw_yaml({}, "  "), "");
  EXPECT_EQ(measured_busbw_yaml({{"all_reduce", 2, 4096, median_of(0)}}, "  "), "");
  const std::string yaml = measured_busbw_yaml({{"all_reduce", 2, 8192, median_of(4e-6)},
                                                {"all_reduce", 2, 4096, median_of(2e-6)},
                                                {"all_gather", 2, 4096, median_of(0)}},
                                               "");
  // sizes in order, each busbw = bus factor 1 x bytes / time: 4096 / 2 us = 8192 / 4 us = 2.048 GB/s
  EXPECT_EQ(yaml, "measured_busbw:\n  all_reduce:\n    2: [[4096, 2.048], [8192, 2.048]]\n");
}

}  // namespace
}  // namespace twinsim::calibrate
