// The catalog's H100, H200 and B200 collectives against measured ones held out of their
// fit (scripts/xla_collectives_to_catalog.py writes every other measured size of each
// group into the node's measured_busbw; the sizes between are judged here):
// - OpenXLA's measured collective table (scenarios/validation/microbench/
//   collectives_h100_b200_xla_perftable.csv): all-reduce, all-gather, reduce-scatter and
//   all-to-all on groups of 2, 4 and 8 GPUs of one node, H100 (sm_90) and B200;
// - nccl-tests' 8-GPU all-reduce on H100 and H200 (nccl_allreduce_8gpu_a100_h100_h200_azure.csv).
// Sizes from 64 KiB, as the catalog curves; below them the smallest size's time holds.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "scenario/load.hpp"
#include "sim/common/csv.hpp"
#include "sim/cost/collective_cost.hpp"
#include "sim/validate/network_fit.hpp"

namespace twinsim {
namespace {

constexpr double kMinBytes = 65536;

struct Measured {
  double bytes, time_s;
};
using Table = std::map<std::pair<std::string, int>, std::vector<Measured>>;  // (op, ranks) -> rows

std::string microbench(const std::string& file) {
  return std::string(TWINSIM_SOURCE_DIR) + "/scenarios/validation/microbench/" + file;
}

// XLA rows: time = tensor bytes / throughput; reduce-scatter's size is its input.
Table read_xla(const std::string& device) {
  const std::map<std::string, std::string> ops{{"all-reduce", "all_reduce"}, {"all-gather", "all_gather"},
                                               {"reduce-scatter", "reduce_scatter"}, {"all-to-all", "all_to_all"}};
  std::ifstream in(microbench("collectives_h100_b200_xla_perftable.csv"));
  EXPECT_TRUE(in);
  Table t;
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) {
    const auto c = split_csv_line(line);
    if (c.size() < 8 || c[0] != device || !ops.contains(c[1]) || c[2] != "F32") continue;
    double elements = 1;
    std::stringstream dims(c[3]);
    for (std::string d; std::getline(dims, d, 'x');) elements *= std::stod(d);
    const int ranks = std::stoi(c[5]);
    double bytes = 4 * elements;
    if (c[1] == "reduce-scatter") bytes *= ranks;
    t[{ops.at(c[1]), ranks}].push_back({bytes, bytes / std::stod(c[7])});
  }
  for (auto& [key, rows] : t)
    std::sort(rows.begin(), rows.end(), [](const Measured& a, const Measured& b) { return a.bytes < b.bytes; });
  return t;
}

// nccl-tests rows: busbw = 2(n-1)/n x bytes / time.
std::vector<Measured> read_nccl_tests(const std::string& gpu_prefix) {
  std::ifstream in(microbench("nccl_allreduce_8gpu_a100_h100_h200_azure.csv"));
  EXPECT_TRUE(in);
  std::vector<Measured> rows;
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) {
    const auto c = split_csv_line(line);
    if (c.size() < 8 || c[0].rfind(gpu_prefix, 0) != 0) continue;
    const double bytes = std::stod(c[6]);
    rows.push_back({bytes, 2.0 * 7 / 8 * bytes / (std::stod(c[7]) * 1e9)});
  }
  return rows;
}

struct Judged {
  std::vector<double> errors;        // |predicted / measured - 1| of the held-out rows
  std::vector<double> errors_1mib;   // those of 1 MiB and more
  double median() const { return errors[errors.size() / 2]; }
  double max_1mib() const { return errors_1mib.empty() ? 0 : errors_1mib.back(); }
};

// The rows the fit left out: the 2nd, 4th, ... of each group's sizes from kMinBytes.
Judged held_out(const ClusterSpec& node, const std::string& op_name, int ranks, const std::vector<Measured>& rows) {
  CollectiveOp op{};
  EXPECT_TRUE(parse_collective(op_name, op));
  Judged j;
  int index = 0;
  for (const Measured& m : rows) {
    if (m.bytes < kMinBytes) continue;
    if (index++ % 2 == 0) continue;  // a fit row
    const double e = std::abs(collective_time_s(node, op, {ranks, ranks}, m.bytes) / m.time_s - 1);
    j.errors.push_back(e);
    if (m.bytes >= 1048576) j.errors_1mib.push_back(e);
  }
  std::sort(j.errors.begin(), j.errors.end());
  std::sort(j.errors_1mib.begin(), j.errors_1mib.end());
  return j;
}

void judge(const ClusterSpec& node, const std::string& op, int ranks, const std::vector<Measured>& rows) {
  const Judged j = held_out(node, op, ranks, rows);
  ASSERT_GE(j.errors.size(), 3u) << node.name << " " << op << " " << ranks;
  // Bands from the figures measured at 2026-11-25 (printed below). Below 1 MiB the fit's
  // points lie 4x apart where a call's time is mostly latency, so a midpoint misses by up
  // to 66%; the band on the maximum starts at 1 MiB, as the NCCL criterion of issue 17.
  // XLA's table itself steps up and down by 20-40% between neighbouring sizes there (its
  // busbw is not monotone in size), hence 40%. (Interpolating log busbw against log bytes
  // was tried: better at some sizes, worse at others, up to 81% on the 8-GPU all-to-all.)
  EXPECT_LE(j.median(), 0.15) << node.name << " " << op << " on " << ranks << ": median " << j.median();
  EXPECT_LE(j.max_1mib(), 0.40) << node.name << " " << op << " on " << ranks << ": max from 1 MiB " << j.max_1mib();
  std::printf("%-14s %-15s %d GPUs: held-out median %5.1f%%, max from 1 MiB %5.1f%%  (%zu sizes)\n",
              node.name.c_str(), op.c_str(), ranks, 100 * j.median(), 100 * j.max_1mib(), j.errors.size());
}

TEST(XlaCollectives, H100HeldOutSizes) {
  const ClusterSpec node = catalog_node("dgx-h100");
  for (const auto& [key, rows] : read_xla("sm_90"))
    if (!(key.first == "all_reduce" && key.second == 8)) judge(node, key.first, key.second, rows);
  judge(node, "all_reduce", 8, read_nccl_tests("H100"));
}

TEST(XlaCollectives, H200HeldOutSizes) {
  judge(catalog_node("dgx-h200"), "all_reduce", 8, read_nccl_tests("H200"));
}

// S. Bekman's one-node, 8-GPU all-reduce (ml-engineering, NCCL 2.27.7): the B200 and H200
// tables through torch.distributed (busbw only, each size printed twice), the A100 one
// nccl-tests' (times).
std::vector<Measured> read_mlengineering(const std::string& file) {
  std::vector<Measured> rows;
  for (const MeasuredAllReduce& m : read_allreduce_csv(microbench(file), 8, "nodes=1", 0))
    rows.push_back({m.bytes, m.time_s});
  return rows;
}

TEST(XlaCollectives, B200HeldOutSizes) {
  const ClusterSpec node = catalog_node("dgx-b200");
  for (const auto& [key, rows] : read_xla("sm_100_B200"))
    if (!(key.first == "all_reduce" && key.second == 8)) judge(node, key.first, key.second, rows);
  judge(node, "all_reduce", 8, read_mlengineering("nccl_allreduce_b200_1node_4node_efa_mlengineering.csv"));
}

// The DGX A100's 8-GPU all-reduce below 1 MiB: S. Bekman's nccl-tests on an 8x A100 node give
// the catalog 32, 128 and 512 KiB; the sizes between are held out: 64 KiB -14.6%, 256 KiB
// -5.6% (measured 2026-11-26; before, every size below 1 MiB took the 1 MiB time: +98%,
// +51%). Above 1 MiB vTrain's measurements hold (tests/unit/validation/vtrain_nccl_test.cpp).
TEST(XlaCollectives, A100SmallAllReduceHeldOutSizes) {
  const ClusterSpec node = catalog_node("dgx-a100-80gb");
  int judged = 0;
  for (const Measured& m : read_mlengineering("nccl_allreduce_a100_8gpu_nvlink_mlengineering.csv")) {
    if (m.bytes != 65536 && m.bytes != 262144) continue;
    const double predicted = collective_time_s(node, CollectiveOp::all_reduce, {8, 8}, m.bytes);
    EXPECT_NEAR(predicted / m.time_s, 1.0, 0.20) << m.bytes;
    ++judged;
  }
  EXPECT_EQ(judged, 2);
}

// The H200's 8-GPU all-reduce (Azure's nccl-tests) against an independent run of the same
// collective (ml-engineering, NCCL 2.27.7, through torch.distributed): from 64 MiB within 7%
// (measured 2026-11-26: at most 5.9%, at 64 MiB); below, the benchmark's own per-call
// overhead shows (the catalog up to 33% faster at 1 MiB).
TEST(XlaCollectives, H200AgreesWithAnIndependentRun) {
  const ClusterSpec node = catalog_node("dgx-h200");
  int judged = 0;
  for (const Measured& m : read_mlengineering("nccl_allreduce_h200_8gpu_nvlink_mlengineering.csv")) {
    if (m.bytes < 64.0 * 1048576) continue;
    const double predicted = collective_time_s(node, CollectiveOp::all_reduce, {8, 8}, m.bytes);
    EXPECT_NEAR(predicted / m.time_s, 1.0, 0.07) << m.bytes;
    ++judged;
  }
  EXPECT_EQ(judged, 9);
}

// Group sizes between the measured 4 and 8 GPUs: S. Bekman's nccl-tests all-reduce at 8 GiB
// on 4-8 GPUs of one H200 and one B200 node (NCCL's default algorithm: ring at 4, NVLS from
// 5 on the H200 and 6 on the B200). The 4-GPU row is the catalog's 4-GPU point at 8 GiB (fit),
// the 8-GPU curve another run's; the 5-7 GPU rows are held out, the simulator interpolating
// the two group sizes' times. Measured 2026-11-26: H200 -3.8% .. -6.7% in busbw (before the
// 4-GPU point, the 4-GPU curve held its 1 GiB figure, 297 GB/s: -10% .. -21%), B200 +3.2% ..
// -6.4% (before -12% .. -16.5%).
TEST(XlaCollectives, AllReduceOnFiveToSevenGpusInterpolates) {
  std::ifstream in(microbench("nccl_allreduce_nvls_vs_ring_by_gpucount_h200_b200_mlengineering.csv"));
  ASSERT_TRUE(in);
  std::string line;
  std::getline(in, line);  // gpu,gpus_in_collective,collective,size_bytes,nccl_algo_default,busbw_gbps_default,...
  int judged = 0;
  while (std::getline(in, line)) {
    const auto c = split_csv_line(line);
    const int gpus = std::stoi(c[1]);
    const ClusterSpec node = catalog_node(c[0] == "H200" ? "dgx-h200" : "dgx-b200");
    const double bytes = std::stod(c[3]), busbw = std::stod(c[5]) * 1e9;
    const double predicted_busbw =
        bus_bandwidth_factor(CollectiveOp::all_reduce, gpus) * bytes /
        collective_time_s(node, CollectiveOp::all_reduce, {gpus, gpus}, bytes);
    std::printf("%s %d GPUs, 8 GiB: busbw measured %.0f GB/s, predicted %.0f (%+.1f%%)\n", c[0].c_str(), gpus,
                busbw / 1e9, predicted_busbw / 1e9, 100 * (predicted_busbw / busbw - 1));
    if (gpus == 4 || gpus == 8) continue;  // the fitted 4-GPU point; the 8-GPU curve (judged above)
    EXPECT_NEAR(predicted_busbw / busbw, 1.0, 0.10) << c[0] << " " << gpus;
    ++judged;
  }
  EXPECT_EQ(judged, 6);
}

}  // namespace
}  // namespace twinsim
