// The catalog GPUs' blanket memory efficiency (0.85 of the datasheet HBM bandwidth on the
// A100, H100 and H200, what a memory-bound kernel without a curve of its own reaches; the
// B200's below) against STREAM's copy, scale, add
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

// The B200's blanket figure, which no STREAM run judges, from one kernel timed on both an
// H100 and a B200 (Liger-Kernel's CuTe DSL RMSNorm, bf16, forward, m x 4096, before and after
// Liger-Kernel PR #1462; rmsnorm_fwd_h100_b200_liger_cutedsl.csv): the fraction of its
// bandwidth each GPU reaches, 4 m n + 2 n bytes over the time. At 8192 x 4096 (134 MB, a
// training step's kernel size) the H100 reaches 0.741 / 0.771 and the B200 0.498 / 0.579:
// the B200 at 0.712 of the H100's fraction (their means'), and its catalog figure the H100's
// 0.85 times that, 0.60 (b200.yaml). The smaller shapes are printed: launch-bound.
TEST(HbmStream, B200FigureIsTheH100sTimesTheSameKernelsRatio) {
  std::ifstream in(std::string(TWINSIM_SOURCE_DIR) +
                   "/scenarios/validation/microbench/rmsnorm_fwd_h100_b200_liger_cutedsl.csv");
  ASSERT_TRUE(in);
  const GpuSpec h100 = catalog_gpu("h100-sxm"), b200 = catalog_gpu("b200");
  std::map<std::string, double> fraction;  // "gpu m" -> mean fraction of the bandwidth, before and after
  std::string line;
  std::getline(in, line);  // gpu,m,n,fwd_us_before,fwd_us_after
  while (std::getline(in, line)) {
    const auto c = split_csv_line(line);
    ASSERT_EQ(c.size(), 5u) << line;
    const GpuSpec& gpu = c[0] == "H100" ? h100 : b200;
    const double m = std::stod(c[1]), n = std::stod(c[2]), bytes = 4 * m * n + 2 * n;
    const double before = bytes / (std::stod(c[3]) * 1e-6) / gpu.hbm_bandwidth_Bps;
    const double after = bytes / (std::stod(c[4]) * 1e-6) / gpu.hbm_bandwidth_Bps;
    std::printf("%s RMSNorm %5s x %s: %.3f / %.3f of the bandwidth\n", c[0].c_str(), c[1].c_str(), c[2].c_str(), before,
                after);
    fraction[c[0] + " " + c[1]] = 0.5 * (before + after);
  }
  ASSERT_TRUE(fraction.contains("H100 8192") && fraction.contains("B200 8192"));
  const double ratio = fraction.at("B200 8192") / fraction.at("H100 8192");
  EXPECT_NEAR(ratio, 0.712, 0.005);
  EXPECT_NEAR(b200.memory_efficiency, h100.memory_efficiency * ratio, 0.01);
  EXPECT_LT(b200.memory_efficiency, h100.memory_efficiency);
}

}  // namespace
}  // namespace twinsim
