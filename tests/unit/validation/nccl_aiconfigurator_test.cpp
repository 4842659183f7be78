// The catalog's one-node collectives against an independent measurement: nccl-tests
// (out-of-place time, fp16) on 2, 4 and 8 GPUs of an A100, H100, H200 and B200 SXM node,
// 1 KiB to 512 MiB, collected by ai-dynamo/aiconfigurator (collector/network/collect_nccl.py;
// scenarios/validation/microbench/nccl_intranode_aiconfigurator.csv). Each row is priced by
// collective_cost, the function the event engine calls, on the catalog node of its GPU. Sizes
// are nccl-tests' (the gathered output for all-gather, the input for reduce-scatter, what one
// rank sends for all-to-all), as collective_cost takes them. The DGX A100's all-gather,
// reduce-scatter and all-to-all curves are fitted on the 2 KiB x 4^k rows
// (scripts/nccl_aiconfigurator_to_catalog.py); only the 1 KiB x 4^k rows, held out, are judged
// here, for every GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "scenario/load.hpp"
#include "sim/common/csv.hpp"
#include "sim/cost/collective_cost.hpp"

namespace twinsim {
namespace {

struct Row {
  std::string gpu, op;
  int gpus = 0;
  double bytes = 0, time_s = 0;
};

std::vector<Row> read_rows() {
  std::ifstream in(std::string(TWINSIM_SOURCE_DIR) +
                   "/scenarios/validation/microbench/nccl_intranode_aiconfigurator.csv");
  EXPECT_TRUE(in);
  std::vector<Row> rows;
  std::string line;
  std::getline(in, line);  // source,gpu,nccl_version,op,gpus,dtype,bytes,time_us
  while (std::getline(in, line)) {
    const auto c = split_csv_line(line);
    if (c.size() < 8) continue;
    rows.push_back({c[1], c[3], std::stoi(c[4]), std::stod(c[6]), std::stod(c[7]) * 1e-6});
  }
  return rows;
}

const std::map<std::string, std::string> kNodeOfGpu{
    {"a100", "dgx-a100-80gb"}, {"h100", "dgx-h100"}, {"h200", "dgx-h200"}, {"b200", "dgx-b200"}};

// Size regimes: below 64 KiB a call is its fixed latency (the measured time barely moves
// with size); from 16 MiB its bandwidth; between, both.
std::string regime(double bytes) {
  if (bytes < 65536) return "latency";
  return bytes < 16.0 * 1048576 ? "middle" : "bandwidth";
}

// predicted / measured - 1 of a row, priced on its GPU's catalog node
double error(const Row& r) {
  static std::map<std::string, ClusterSpec> nodes;
  if (!nodes.contains(r.gpu)) nodes.emplace(r.gpu, catalog_node(kNodeOfGpu.at(r.gpu)));
  CollectiveOp op{};
  EXPECT_TRUE(parse_collective(r.op, op)) << r.op;
  return collective_time_s(nodes.at(r.gpu), op, {r.gpus, r.gpus}, r.bytes) / r.time_s - 1;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// 1 KiB, 4 KiB, ..., 256 MiB: never a fit row
bool held_out(double bytes) {
  const int log2 = static_cast<int>(std::lround(std::log2(bytes)));
  return log2 % 2 == 0;
}

using Key = std::tuple<std::string, std::string, int, std::string>;  // gpu, op, gpus, regime

std::map<Key, std::vector<double>> held_out_errors_by_group() {
  std::map<Key, std::vector<double>> groups;
  for (const Row& r : read_rows())
    if (held_out(r.bytes)) groups[{r.gpu, r.op, r.gpus, regime(r.bytes)}].push_back(error(r));
  return groups;
}

TEST(NcclAiconfigurator, HeldOutRowsByGpuOpRanksAndRegime) {
  const auto groups = held_out_errors_by_group();
  std::size_t rows = 0;
  std::printf("gpu  op             gpus regime     rows  median  min     max   (predicted/measured - 1, %%)\n");
  for (const auto& [key, e] : groups) {
    const auto [gpu, op, gpus, reg] = key;
    std::printf("%-4s %-14s %d    %-9s  %2zu  %+6.1f  %+6.1f  %+6.1f\n", gpu.c_str(), op.c_str(), gpus, reg.c_str(),
                e.size(), 100 * median(e), 100 * *std::min_element(e.begin(), e.end()),
                100 * *std::max_element(e.begin(), e.end()));
    rows += e.size();
  }
  EXPECT_EQ(rows, 480u);  // 4 GPUs x 4 collectives x 3 group sizes x 10 held-out sizes
}

// The fitted DGX A100 collectives on their held-out sizes, within 15% (median over all sizes
// of each group) and 40% (each size). Before the fit the protocol model priced them 14-41% too
// fast at every size (median by regime, 0.8 of 300 GB/s plus NCCL's latency model).
TEST(NcclAiconfigurator, A100FittedCollectivesOnHeldOutSizes) {
  std::map<std::pair<std::string, int>, std::vector<double>> by_op;
  for (const auto& [key, e] : held_out_errors_by_group()) {
    const auto& [gpu, op, gpus, reg] = key;
    if (gpu != "a100" || op == "all_reduce") continue;
    for (double x : e) {
      EXPECT_LE(std::abs(x), 0.40) << op << " on " << gpus;
      by_op[{op, gpus}].push_back(std::abs(x));
    }
  }
  ASSERT_EQ(by_op.size(), 9u);
  for (const auto& [key, e] : by_op) EXPECT_LE(median(e), 0.15) << key.first << " on " << key.second;
}

// The finding on H100, H200 and B200, whose curves are OpenXLA's measured table from 64 KiB
// (xla_collectives_test.cpp): below 64 KiB the catalog prices every collective at least 40%
// slower than nccl-tests (XLA's 64 KiB time holds below 64 KiB, and is already 1.5-3x
// nccl-tests' there). Refitting those nodes on these rows moved the serving and training
// judges away overall (report s13/13), so the finding stays a test. Third sources settle it
// (nccl_small_messages_test.cpp): the gap is a per-call cost of an eager call, which the
// catalog carries and aiconfigurator's back-to-back calls hide.
TEST(NcclAiconfigurator, XlaCurvesAreSlowOnSmallMessages) {
  int groups = 0;
  for (const auto& [key, e] : held_out_errors_by_group()) {
    const auto& [gpu, op, gpus, reg] = key;
    if (gpu == "a100" || reg != "latency") continue;
    EXPECT_GE(median(e), 0.40) << gpu << " " << op << " on " << gpus;
    ++groups;
  }
  EXPECT_EQ(groups, 36);
}

}  // namespace
}  // namespace twinsim
