// The catalog's DGX A100 all-reduce against vTrain's measured NCCL all-reduce on one A100
// node (scenarios/validation/vtrain/nccl_a100/, 1 MiB..1 GiB in 1 MiB steps). The catalog
// holds 93 sizes of the 2, 4 and 8 GPU runs (hardware/catalog/nodes/dgx-a100-80gb.yaml);
// the 931 other sizes of those runs and every size of the 3, 5, 6 and 7 GPU runs (group
// sizes the catalog interpolates) are out of sample. Both are judged at every size.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "scenario/load.hpp"
#include "sim/cost/collective_cost.hpp"

namespace twinsim {
namespace {

struct Measured {
  double bytes, time_s;
};

// nccl-tests rows: size, count, type, out-of-place time (ns), busbw, in-place time, busbw.
std::vector<Measured> read_allreduce(int gpus) {
  const std::string path = std::string(TWINSIM_SOURCE_DIR) + "/scenarios/validation/vtrain/nccl_a100/allreduce_" +
                           std::to_string(gpus) + "gpu.csv";
  std::ifstream in(path);
  EXPECT_TRUE(in) << path;
  std::vector<Measured> rows;
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::stringstream cells(line);
    std::string size, count, type, time_ns;
    std::getline(cells, size, ',');
    std::getline(cells, count, ',');
    std::getline(cells, type, ',');
    std::getline(cells, time_ns, ',');
    rows.push_back({std::stod(size), std::stod(time_ns) * 1e-9});
  }
  return rows;
}

struct Errors {
  double max_abs = 0, median_abs = 0;
  int rows = 0;
};

Errors errors_for(int gpus) {
  const ClusterSpec node = catalog_node("dgx-a100-80gb");
  std::vector<double> abs_errors;
  for (const Measured& m : read_allreduce(gpus)) {
    const double predicted = collective_time_s(node, CollectiveOp::all_reduce, {gpus, gpus}, m.bytes);
    abs_errors.push_back(std::abs(predicted / m.time_s - 1));
  }
  std::sort(abs_errors.begin(), abs_errors.end());
  return {abs_errors.back(), abs_errors[abs_errors.size() / 2], static_cast<int>(abs_errors.size())};
}

class VtrainAllReduce : public ::testing::TestWithParam<int> {};

// Within 10% at every size >= 1 MiB on the measured group sizes 2, 4 and 8 (measured at
// 2026-11-25: max 5.1%, 8.3%, 9.6%); 20% on the interpolated 3, 5, 6 and 7 (max 18.1%,
// 11.3%, 9.8%, 14.5%: the 3-GPU ring is slower at 1-2 MiB than 2 or 4); medians within 3%
// (2.1% on 3 GPUs, at most 0.8% on the others).
TEST_P(VtrainAllReduce, WithinItsBandAtEverySize) {
  const int gpus = GetParam();
  const Errors e = errors_for(gpus);
  const bool measured = gpus == 2 || gpus == 4 || gpus == 8;
  EXPECT_EQ(e.rows, 1024);
  EXPECT_LE(e.max_abs, measured ? 0.10 : 0.20) << gpus << " GPUs: max |error| " << e.max_abs << ", median " << e.median_abs;
  EXPECT_LE(e.median_abs, 0.03) << gpus << " GPUs";
  ::testing::Test::RecordProperty("max_abs_error", std::to_string(e.max_abs));
  ::testing::Test::RecordProperty("median_abs_error", std::to_string(e.median_abs));
}

INSTANTIATE_TEST_SUITE_P(Gpus, VtrainAllReduce, ::testing::Values(2, 3, 4, 5, 6, 7, 8));

TEST(VtrainAllReduce, TheCatalogUsesTheMeasuredCurveInsideANodeOnly) {
  const ClusterSpec node = catalog_node("dgx-a100-80gb");
  const CollectiveCost inside = collective_cost(node, CollectiveOp::all_reduce, {8, 8}, 64.0 * (1 << 20));
  EXPECT_TRUE(inside.measured);
  EXPECT_FALSE(inside.extrapolated);
  // below 1 MiB the measured range ends: flagged
  EXPECT_TRUE(collective_cost(node, CollectiveOp::all_reduce, {8, 8}, 4096).extrapolated);
  // across nodes, and for collectives not measured (broadcast; the all-gather now is:
  // nccl_aiconfigurator_test.cpp), the protocol model
  EXPECT_FALSE(collective_cost(node, CollectiveOp::all_reduce, {16, 8}, 64.0 * (1 << 20)).measured);
  EXPECT_TRUE(collective_cost(node, CollectiveOp::all_gather, {8, 8}, 64.0 * (1 << 20)).measured);
  EXPECT_FALSE(collective_cost(node, CollectiveOp::broadcast, {8, 8}, 64.0 * (1 << 20)).measured);
}

}  // namespace
}  // namespace twinsim
