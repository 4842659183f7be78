// The catalog GPUs' blanket memory efficiency (0.85 of the datasheet HBM bandwidth, what a
// memory-bound kernel without a curve of its own reaches) against STREAM's copy, scale, add
// and triad on Azure's A100, H100 and H200 VMs (Azure/AI-benchmarking-guide "HBM Bandwidth";
// scenarios/validation/microbench/hbm_bandwidth_stream_a100_h100_h200_azure.csv): an
// independent judge, not the figure's source. Measured 2026-11-26: the catalog's rate within
// -4.1% .. +7.6% of STREAM's (the A100's copy 1.61 TB/s against 0.85 x 2.039); dot, a
// reduction, is left out (it reads only).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>

#include "scenario/load.hpp"
#include "sim/common/csv.hpp"

namespace twinsim {
namespace {

// The source's device names and the catalog entries they are
const std::map<std::string, std::string> kCatalogEntry = {{"A100-SXM4-80GB (Azure ND A100 v4)", "a100-sxm-80gb"},
                                                          {"H100-80GB-HBM3 (Azure ND H100 v5)", "h100-sxm"},
                                                          {"H200-141GB (Azure ND H200 v5)", "h200-sxm"}};

TEST(HbmStream, BlanketMemoryEfficiencyWithinEightPercentOfStream) {
  std::ifstream in(std::string(TWINSIM_SOURCE_DIR) +
                   "/scenarios/validation/microbench/hbm_bandwidth_stream_a100_h100_h200_azure.csv");
  ASSERT_TRUE(in);
  std::string line;
  std::getline(in, line);  // gpu,kernel,bandwidth_tbps
  int judged = 0;
  while (std::getline(in, line)) {
    const auto c = split_csv_line(line);
    if (c.size() != 3 || c[1] == "dot") continue;
    ASSERT_TRUE(kCatalogEntry.contains(c[0])) << c[0];
    const std::string& name = kCatalogEntry.at(c[0]);
    const GpuSpec gpu = catalog_gpu(name);
    const double catalog = gpu.hbm_bandwidth_Bps * gpu.memory_efficiency, stream = std::stod(c[2]) * 1e12;
    std::printf("%-10s %-6s STREAM %.2f TB/s, catalog %.2f TB/s (%+.1f%%)\n", name.c_str(), c[1].c_str(), stream / 1e12,
                catalog / 1e12, 100 * (catalog / stream - 1));
    EXPECT_NEAR(catalog / stream, 1.0, 0.08) << name << " " << c[1];
    ++judged;
  }
  EXPECT_EQ(judged, 12);
}

}  // namespace
}  // namespace twinsim
