// sim/validate/network_fit (`twinsim fit-network`): reading nccl-tests tables, and a fit that
// recovers a known efficiency curve from the times it produces.
#include "sim/validate/network_fit.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <utility>
#include <vector>
#include <stdexcept>
#include <string>

#include "sim/cost/collective_cost.hpp"
#include "tests/unit/cost/test_hardware.hpp"

namespace twinsim {
namespace {

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

TEST(NetworkFit, ReadsTimesOrBusBandwidthAndFilters) {
  const std::string timed = write_temp("timed.csv",
                                       "run,size_bytes,oop_time_us\n"
                                       "a,1048576,100\nb,1048576,999\na,2097152,150\na,512,10\n");
  const std::vector<MeasuredAllReduce> rows = read_allreduce_csv(timed, 16, "run=a", 1024);
  ASSERT_EQ(rows.size(), 2u);  // b filtered, the 512 B row dropped
  EXPECT_DOUBLE_EQ(rows[0].time_s, 100e-6);
  EXPECT_DOUBLE_EQ(rows[1].bytes, 2097152);
  // busbw only: time = 2(n-1)/n x bytes / busbw, 32 ranks: 1.9375 x 1 GiB / 100 GB/s
  const std::string bus = write_temp("bus.csv", "nodes,size_bytes,busbw_gbps\n4,1073741824,100\n");
  EXPECT_DOUBLE_EQ(read_allreduce_csv(bus, 32, "", 0).front().time_s, 1.9375 * 1073741824 / 100e9);
  EXPECT_THROW(read_allreduce_csv(write_temp("bad.csv", "size,time\n1,2\n"), 16, "", 0), std::runtime_error);
  EXPECT_THROW(read_allreduce_csv(timed, 16, "gpu=x", 0), std::runtime_error);   // no such column
  EXPECT_THROW(read_allreduce_csv(timed, 16, "run=zzz", 0), std::runtime_error);  // no rows
}

// The message of the error reading `text` throws, or "" (issue 58: `1048576abc` was read as
// 1048576, a repeated size merged, and times of -5, NaN or 0 dropped, all without a word).
std::string refusal(const std::string& name, const std::string& text) {
  try {
    read_allreduce_csv(write_temp(name, text), 16, "", 0);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

TEST(NetworkFit, EveryBadCellOrRepeatedSizeIsRefusedByLineAndColumn) {
  const std::string head = "size_bytes,oop_time_us\n0,5\n1024,10\n";  // nccl-tests' 0-byte row is skipped
  const std::vector<std::pair<std::string, std::string>> cases{
      {"1048576abc,12\n", ":4, column 1 (size_bytes): '1048576abc' is not a number"},
      {"2048,-5\n", ":4, column 2 (oop_time_us): '-5' must be above 0"},
      {"2048,nan\n", ":4, column 2 (oop_time_us): 'nan' is not a number"},
      {"2048,0\n", ":4, column 2 (oop_time_us): '0' must be above 0"},
      {"2048,abc\n", ":4, column 2 (oop_time_us): 'abc' is not a number"},
      {"2048\n", ":4: 1 columns, the header has 2"},
      {"1024,11\n", ":4: size_bytes=1024 is given twice (line 3 too); keep one, or pick one run with --where"},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const std::string name = "refused" + std::to_string(i) + ".csv";
    const std::string message = refusal(name, head + cases[i].first);
    EXPECT_NE(message.find(name + cases[i].second), std::string::npos) << cases[i].first << " gave: " << message;
  }
}

// Times made by a cluster whose network gets 30% of its line rate at 1 MiB, 60% at 64 MiB and
// 90% at 4 GiB (log-linear between); the fit, starting from the flat default, finds those
// fractions at the sizes it fits (1 MiB, 64 MiB, 4 GiB), and the held-out sizes between them
// (8 and 512 MiB) come out as the true curve gives them.
TEST(NetworkFit, RecoversTheCurveThatMadeTheTimes) {
  ClusterSpec truth = test::dgx_a100(4);
  truth.inter_node.efficiency = {{1048576, 0.3}, {67108864, 0.6}, {4294967296, 0.9}};
  std::vector<MeasuredAllReduce> rows;
  for (double bytes = 1048576; bytes <= 4294967296; bytes *= 8)
    rows.push_back({bytes, collective_time_s(truth, CollectiveOp::all_reduce, packed_group(truth, 32), bytes)});
  const NetworkFitReport r = fit_network_efficiency(test::dgx_a100(4), 32, rows, true);
  ASSERT_EQ(r.curve.size(), 3u);
  EXPECT_NEAR(r.curve[0].efficiency, 0.3, 1e-3);
  EXPECT_NEAR(r.curve[1].efficiency, 0.6, 1e-3);
  EXPECT_NEAR(r.curve[2].efficiency, 0.9, 1e-3);
  EXPECT_LT(r.fit.max, 1e-3);
  EXPECT_EQ(r.held_out.count, 2);
  EXPECT_LT(r.held_out.max, 1e-3);
  EXPECT_GT(r.held_out_before.max, 0.3);  // the flat 0.96 is far off at 8 MiB
}

// The latency fit finds the per-step network latency that made the smallest sizes' times.
TEST(NetworkFit, RecoversTheLatencyThatMadeTheSmallestTimes) {
  ClusterSpec truth = test::dgx_a100(2);
  truth.inter_node.latency_s = 80e-6;
  std::vector<MeasuredAllReduce> rows;
  for (double bytes = 8; bytes <= 1024; bytes *= 2)
    rows.push_back({bytes, collective_time_s(truth, CollectiveOp::all_reduce, packed_group(truth, 16), bytes)});
  EXPECT_NEAR(fit_network_latency_s(test::dgx_a100(2), 16, rows), 80e-6, 1e-9);
}

}  // namespace
}  // namespace twinsim
