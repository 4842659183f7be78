// The catalog's H100 and H200 against bf16 products chosen for how their output tiles fill
// 132 SMs (scenarios/validation/microbench/measured_2026-11-27/{h100,h200}/gemm_tiles.csv,
// scripts/gpu_gemm_tiles.py: m 256-4096 x n 1024-12288 x k 4096, timed cool), measured after
// the Hopper entries' gemm_tile_edges were set from cuBLAS's profiled tiles and this repo's layer
// GEMMs: a judge of the wave model (sim/cost/compute_cost.cpp gemm_wave_utilization), not a fit.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "scenario/load.hpp"
#include "sim/validate/error_stats.hpp"
#include "sim/validate/gemm_fit.hpp"

namespace twinsim {
namespace {

ErrorSummary time_errors(const GpuSpec& gpu, const std::vector<MeasuredGemm>& rows) {
  std::vector<double> e;
  for (const MeasuredGemm& g : rows) e.push_back(gemm_time_error(gpu, g, GemmTiming::kernel));
  return summarize(e);
}

struct SweepCase {
  const char* gpu;  // catalog entry, and measured_2026-11-27/<dir>/gemm_tiles.csv
  const char* dir;
  const char* device;
};

class GemmTiles : public ::testing::TestWithParam<SweepCase> {};

// Measured 2026-11-27, time error median / p90 (interpolated, as numpy's percentile) with the
// tile choices [128, 192, 256]: H100 3.8% / 23.5%, H200 4.3% / 18.6%; with the one 128 tile on
// the same curves 7.0% / 36.7% and 8.4% / 31.6%. The catalog files quote the p90 at the nearest
// rank above (23.7%, 19.1%; the catalog before, its curves fitted under one tile: H100 7.1% /
// 37.2%, max 69.1% against 37.2%; H200 8.7% / 32.1%, max 69.0% against 33.6%).
TEST_P(GemmTiles, TheHoppersTileChoicesPredictTheSweep) {
  const SweepCase& c = GetParam();
  const std::vector<MeasuredGemm> rows = read_gemm_csv(std::string(TWINSIM_SOURCE_DIR) +
                                                           "/scenarios/validation/microbench/measured_2026-11-27/" +
                                                           c.dir + "/gemm_tiles.csv",
                                                       c.device, Dtype::bf16);
  ASSERT_EQ(rows.size(), 84u);
  const GpuSpec gpu = catalog_gpu(c.gpu);
  ASSERT_EQ(gpu.gemm_tile_edges, (std::vector<std::int64_t>{128, 192, 256}));
  GpuSpec one_tile = gpu;
  one_tile.gemm_tile_edges = {128};
  const ErrorSummary choices = time_errors(gpu, rows), single = time_errors(one_tile, rows);
  std::printf("%s time error median / p90: tile choices %.1f%% / %.1f%%, one 128 tile %.1f%% / %.1f%%\n", c.gpu,
              100 * choices.median, 100 * choices.p90, 100 * single.median, 100 * single.p90);
  EXPECT_LT(choices.median, 0.05);
  EXPECT_LT(choices.p90, 0.26);
  EXPECT_GT(single.p90, choices.p90 + 0.1);  // what the choices are for
}

INSTANTIATE_TEST_SUITE_P(Hopper, GemmTiles,
                         ::testing::Values(SweepCase{"h100-sxm", "h100", "H100"}, SweepCase{"h200-sxm", "h200", "H200"}),
                         [](const ::testing::TestParamInfo<SweepCase>& info) { return std::string(info.param.dir); });

}  // namespace
}  // namespace twinsim
