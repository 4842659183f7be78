// The power limit's slowing of GEMMs that fill the time (sim/cost/power_limit.hpp):
//   - the formula on hand-derived mixes;
//   - the catalog H100's figures against the duty-cycle sweep they were fitted to, every row
//     (scenarios/validation/microbench/measured_2026-11-26/h100/gemm_duty_cycle.csv: the fit
//     used one shape's rows; the other shapes, fp8 and the SwiGLU fillers are held out);
//   - the H200's own sweep (same folder, h200/gemm_duty_cycle.csv), measured after the fit;
//   - an independent judge: the H200's back-to-back layer GEMMs (same folder, gemm_fwd_h200.csv,
//     measured in an earlier session and not used by the fit), which the cool curve predicted
//     13-14% too fast;
//   - a training layer's GEMMs on the catalog H100 take the clock their pass's mix leaves.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "scenario/load.hpp"
#include "sim/common/csv.hpp"
#include "sim/cost/compute_cost.hpp"
#include "sim/cost/power_limit.hpp"
#include "sim/validate/error_stats.hpp"
#include "sim/validate/gemm_fit.hpp"

namespace twinsim {
namespace {

const std::string kMeasured = std::string(TWINSIM_SOURCE_DIR) + "/scenarios/validation/microbench/measured_2026-11-26/";

GpuSpec with_limit(double memory_bound_load, double knee_load, double slope) {
  GpuSpec gpu;
  gpu.power_limited_gemm = PowerLimitedGemm{memory_bound_load, knee_load, slope};
  return gpu;
}

TEST(PowerLimit, ClockHoldsUpToTheKneeThenFallsWithTheLoad) {
  const GpuSpec gpu = with_limit(0.5, 0.6, 0.5);
  // GEMMs 0.8 s, memory-bound 0.2 s: load 0.8 + 0.5 x 0.2 = 0.9, clock 1 - 0.5 x 0.3 = 0.85
  EXPECT_NEAR(sustained_gemm_clock(gpu, {0.8, 0.2, 0.0}), 0.85, 1e-12);
  // the same work with 0.5 s idle between: load 0.9 / 1.5 = 0.6, at the knee
  EXPECT_NEAR(sustained_gemm_clock(gpu, {0.8, 0.2, 0.5}), 1.0, 1e-12);
  // GEMMs alone: load 1, clock 1 - 0.5 x 0.4 = 0.8
  EXPECT_NEAR(sustained_gemm_clock(gpu, {1.0, 0.0, 0.0}), 0.8, 1e-12);
  EXPECT_EQ(sustained_gemm_clock(GpuSpec{}, {1.0, 0.0, 0.0}), 1.0);  // no limit given
  EXPECT_EQ(sustained_gemm_clock(gpu, {}), 1.0);                      // no work
}

struct DutyRow {
  std::string dtype, filler;
  std::int64_t m, n, k;
  double duty, gemm_s, tflops;
};

std::vector<DutyRow> read_duty_cycle(const std::string& gpu_dir) {
  std::ifstream in(kMeasured + gpu_dir + "/gemm_duty_cycle.csv");
  EXPECT_TRUE(in);
  std::string line;
  std::getline(in, line);  // dtype,filler,m,n,k,duty_target,duty_measured,gemm_s,gemm_tflops,...
  std::vector<DutyRow> rows;
  while (std::getline(in, line)) {
    const auto c = split_csv_line(line);
    rows.push_back({c[0], c[1], std::stoll(c[2]), std::stoll(c[3]), std::stoll(c[4]), std::stod(c[6]),
                    std::stod(c[7]), std::stod(c[8])});
  }
  return rows;
}

// Each row's GEMM rate against its shape's cool rate (the highest it reached in the sweep),
// predicted from the row's mix (a copy or SwiGLU filler is memory-bound time, a spin kernel
// idle time).
ErrorSummary clock_errors(const GpuSpec& gpu, const std::vector<DutyRow>& rows) {
  std::map<std::tuple<std::string, std::int64_t, std::int64_t, std::int64_t>, double> cool;
  for (const DutyRow& r : rows) cool[{r.dtype, r.m, r.n, r.k}] = std::max(cool[{r.dtype, r.m, r.n, r.k}], r.tflops);
  std::vector<double> errors;
  for (const DutyRow& r : rows) {
    const double cool_tflops = cool[{r.dtype, r.m, r.n, r.k}];
    const double cool_s = 2.0 * r.m * r.n * r.k / (cool_tflops * 1e12);
    const double fill_s = r.gemm_s * (1 - r.duty) / r.duty;
    WorkMix mix{cool_s, 0, 0};
    (r.filler == "sleep" ? mix.idle_s : mix.memory_s) = fill_s;  // copy, swiglu: memory-bound
    const double predicted = sustained_gemm_clock(gpu, mix), measured = r.tflops / cool_tflops;
    errors.push_back(predicted / measured - 1);
    std::printf("%s %s %lldx%lldx%lld duty %.3f: clock measured %.3f predicted %.3f\n", r.dtype.c_str(),
                r.filler.c_str(), static_cast<long long>(r.m), static_cast<long long>(r.n),
                static_cast<long long>(r.k), r.duty, measured, predicted);
  }
  const ErrorSummary summary = summarize(errors);
  std::printf("GEMM rate error over %d rows: median %.1f%%, max %.1f%%\n", summary.count, 100 * summary.median,
              100 * summary.max);
  return summary;
}

// A catalog GPU's power_limited_gemm against the duty-cycle sweep of measured_2026-11-26/<gpu_dir>/.
void expect_sweep_within(const char* gpu_name, const char* gpu_dir, std::size_t rows_expected, double median_band,
                         double max_band) {
  const GpuSpec gpu = catalog_gpu(gpu_name);
  ASSERT_TRUE(gpu.power_limited_gemm);
  const std::vector<DutyRow> rows = read_duty_cycle(gpu_dir);
  ASSERT_EQ(rows.size(), rows_expected);
  const ErrorSummary errors = clock_errors(gpu, rows);
  EXPECT_LT(errors.median, median_band);
  EXPECT_LT(errors.max, max_band);
}

// 34 rows of copy, idle and back-to-back fillers (12 of them fitted), 4 with SwiGLU's eager
// silu(gate) * up between the GEMMs (held out: median 2.7%, max 3.3%, the clock predicted a
// little high: those kernels draw more than a copy).
TEST(PowerLimit, CatalogH100AgainstItsDutyCycleSweep) { expect_sweep_within("h100-sxm", "h100", 38, 0.02, 0.05); }

// The H200 takes the H100's figures; its own sweep (8192x28672x4096, copy and idle fillers,
// measured after the fit) judges them: rate error median 0.8%, max 1.6%.
TEST(PowerLimit, CatalogH200AgainstItsOwnDutyCycleSweep) { expect_sweep_within("h200-sxm", "h200", 8, 0.02, 0.04); }

// The H200's layer GEMMs timed back to back (CUDA graphs of up to 64 calls): the load of
// GEMMs alone. Only the math-bound rows (>= 1e11 FLOPs): the limit slows the math.
TEST(PowerLimit, H200BackToBackGemmsJudgeTheH100Figures) {
  const GpuSpec gpu = catalog_gpu("h200-sxm");
  ASSERT_TRUE(gpu.power_limited_gemm);
  const double clock = sustained_gemm_clock(gpu, {1.0, 0.0, 0.0});
  std::vector<double> before, after;
  for (const MeasuredGemm& g : read_gemm_csv(kMeasured + "gemm_fwd_h200.csv", "", Dtype::bf16)) {
    if (g.flops() < 1e11) continue;
    ComputeOp op = gemm_op(Dtype::bf16, g.m, g.n, g.k);
    const double measured_s = g.flops() / (g.tflops * 1e12);
    const ComputeCost cool = gemm_cost(gpu, op);
    op.clock_scale = clock;
    const ComputeCost limited = gemm_cost(gpu, op);
    before.push_back(std::max(cool.math_s, cool.memory_s) / measured_s - 1);
    after.push_back(std::max(limited.math_s, limited.memory_s) / measured_s - 1);
  }
  // the worst rows, +30-50%, are products of 256-2048 tokens that ran at 700-733 TFLOP/s
  // where the cool curve itself predicted them 20-28% slow: a curve's error, not the limit's
  const ErrorSummary was = summarize(before), now = summarize(after);
  std::printf("H200, %d rows, clock %.3f: time error median |e| %.1f%% -> %.1f%%, max %.1f%% -> %.1f%%, "
              "after: lowest %+.1f%%, highest %+.1f%%\n",
              was.count, clock, 100 * was.median, 100 * now.median, 100 * was.max, 100 * now.max,
              100 * *std::min_element(after.begin(), after.end()), 100 * *std::max_element(after.begin(), after.end()));
  ASSERT_GE(was.count, 20);
  EXPECT_LT(now.median, 0.5 * was.median);
  EXPECT_LT(now.median, 0.06);
}

// A limit below the sweep's: hand-derived from the figures above (knee 0.64, slope 0.435 at
// 700 W). Full load holds c1 = 1 - 0.435 x 0.36 = 0.8434 there; knee = c1^beta gives beta =
// ln 0.64 / ln 0.8434 = 2.6204. At 500 W the limit is reached at the load 0.64 x 5/7 =
// 0.45714 and full load holds 0.45714^(1/2.6204) = 0.74177.
TEST(PowerLimit, ALowerLimitMovesTheKneeAndTheFullLoadClock) {
  GpuSpec gpu = with_limit(0.46, 0.64, 0.435);
  gpu.power_limited_gemm->measured_at_W = 700;
  const WorkMix full{1.0, 0.0, 0.0}, light{0.45, 0.0, 0.55};
  EXPECT_NEAR(sustained_gemm_clock(gpu, full), 0.8434, 1e-12);  // no power_limit_W: the sweep's own
  gpu.power_limit_W = 700;
  EXPECT_NEAR(sustained_gemm_clock(gpu, full), 0.8434, 1e-12);
  gpu.power_limit_W = 500;
  EXPECT_NEAR(sustained_gemm_clock(gpu, full), 0.74177, 1e-5);
  EXPECT_EQ(sustained_gemm_clock(gpu, light), 1.0);  // load 0.45, below the knee 0.457
  // halfway from the knee to full load, halfway between the two clocks
  const WorkMix half{(1 + 0.64 * 5 / 7.0) / 2, 0.0, 1 - (1 + 0.64 * 5 / 7.0) / 2};
  EXPECT_NEAR(sustained_gemm_clock(gpu, half), (1 + 0.74177) / 2, 1e-5);
  gpu.power_limit_W = 1200;  // the knee past full load: never slowed
  EXPECT_EQ(sustained_gemm_clock(gpu, full), 1.0);
}

// Attention's clock is its own draw's, whatever the mix: 1 at the sweep's 700 W (its kernels
// alone draw the limit there) and above; at 500 W the draw law's clock, by hand
// (500 / 700)^(1 / beta) with beta = ln 0.64 / ln(1 - 0.435 x 0.36) = 2.6204: 0.87950, the
// same for a full and a light mix (the mix's GEMM clock would give 0.742 and 1 here).
TEST(PowerLimit, AttentionSlowsOnlyBelowTheSweepsLimit) {
  GpuSpec gpu = with_limit(0.46, 0.64, 0.435);
  gpu.power_limited_gemm->measured_at_W = 700;
  EXPECT_EQ(sustained_attention_clock(gpu), 1.0);  // no limit of its own: the sweep's
  gpu.power_limit_W = 700;
  EXPECT_EQ(sustained_attention_clock(gpu), 1.0);
  gpu.power_limit_W = 500;
  const double beta = std::log(0.64) / std::log(1 - 0.435 * 0.36);
  EXPECT_NEAR(beta, 2.6204, 1e-4);
  EXPECT_NEAR(sustained_attention_clock(gpu), 0.87950, 1e-5);
  EXPECT_NEAR(sustained_attention_clock(gpu), std::pow(5 / 7.0, 1 / beta), 1e-12);
  gpu.power_limit_W = 1200;  // a raised limit: never above the curves
  EXPECT_EQ(sustained_attention_clock(gpu), 1.0);
  EXPECT_EQ(sustained_attention_clock(GpuSpec{}), 1.0);
}

// Judge: a GEMM loop (full load) on the H100 PCIe at 350 W against the SXM at 700 W, the same
// script on both (scenarios/validation/microbench/gemm_bf16_h100_pcie_sxm_torch_perf_test_data.csv).
// The PCIe part's entry is the SXM's curves against its own datasheet peak and SM count, at
// the clock its limit leaves (0.647 of its cool clock at 350 W, the SXM's 0.843 at 700 W).
// Measured PCIe/SXM 0.629 (4096^3) and 0.618 (8192^3); predicted 0.604 and 0.594 (-4.0%,
// -3.8%). Without the limit's scaling the PCIe part would hold the SXM's 0.843 too: 0.604 x
// 0.843 / 0.647 = 0.787 and 0.774, 25% fast.
// Caveat (printed, not asserted): the script (zzc0721 test.py) times 6 + 30 calls after smaller
// sizes, ~50 ms on the SXM, about the 40-80 ms the limit takes to act (h100/power_response.csv),
// and the SXM's 797.5 TFLOP/s is the duty-cycle sweep's cool rate (797), not its full-load 683.
// Read with the SXM cool, the PCIe's 0.618 bounds its sustained clock from above only
// (0.618 / 0.774 = 0.80 of its cool rate against the 0.647 predicted).
// A second board, held out: the H800 PCIe (114 SMs, 350 W; its FP32 and TF32 rows in the same
// issue, 37.77 and 242.83, are the H100 PCIe's 36.95 and 240.43 within 2%: the same compute),
// the same script (zzc0721 issue #112, PyTorch 2.8.0+cu128, AutoDL), ran 503.83 and 499.46 TFLOP/s,
// PCIe/SXM 0.639 and 0.626 against the same SXM: within 3% of the H100 PCIe's, so the
// premise is one of the script, not of one board.
TEST(PowerLimit, H100PcieAt350WAgainstTheSxmAt700W) {
  const GpuSpec sxm = catalog_gpu("h100-sxm"), pcie = catalog_gpu("h100-pcie");
  // {board, n} -> measured TFLOP/s {SXM, PCIe}
  const std::map<std::pair<std::string, std::int64_t>, std::pair<double, double>> measured_tflops = {
      {{"H100 PCIe", 4096}, {788.72, 495.93}},
      {{"H100 PCIe", 8192}, {797.51, 492.84}},
      {{"H800 PCIe", 4096}, {788.72, 503.83}},
      {{"H800 PCIe", 8192}, {797.51, 499.46}}};
  for (const auto& [board_n, tflops] : measured_tflops) {
    const std::int64_t n = board_n.second;
    const double measured = tflops.second / tflops.first;
    const auto loop_s = [n = n](const GpuSpec& gpu) {
      ComputeOp op = gemm_op(Dtype::bf16, n, n, n);
      op.clock_scale = sustained_gemm_clock(gpu, {1.0, 0.0, 0.0});
      const ComputeCost c = gemm_cost(gpu, op);
      return std::max(c.math_s, c.memory_s);
    };
    const double predicted = loop_s(sxm) / loop_s(pcie);
    std::printf("%s %lld^3 bf16: PCIe/SXM rate measured %.3f, predicted %.3f (%+.1f%%)\n", board_n.first.c_str(),
                static_cast<long long>(n), measured, predicted, 100 * (predicted / measured - 1));
    const double flops = 2.0 * static_cast<double>(n) * n * n;
    std::printf("  the SXM side: measured %.1f TFLOP/s, predicted %.1f at its full-load clock\n", tflops.first,
                flops / loop_s(sxm) / 1e12);
    EXPECT_NEAR(predicted / measured, 1.0, 0.08);
  }
}

// Judge: cuBLAS's 8192^3 bf16 GEMM on an H200 NVL (the datasheet's 600 W board) timed at
// 1.6056 ms, 684.78 TFLOP/s (NVIDIA/tilus pull request #154, "Benchmark results (m=8192,
// n=8192, k=8192)", cublas row; the loop's length is not stated). The catalog's part takes
// its datasheet peak (835.5, a lower clock than the SXM's 989.4) and the H200 SXM's curve
// fractions: cool, 666.3 predicted (-2.7%), asserted within 8%. At the clock its 600 W
// leaves at full load (0.795) the prediction is 529.8, 22.6% slow (printed, not asserted):
// like the PCIe judge's, this capped board ran faster than the limit's scaling says, not
// slower, so it gives no support to a steeper clock law below 700 W (s11 report_07).
TEST(PowerLimit, H200NvlAt600WCublasGemm) {
  const GpuSpec nvl = catalog_gpu("h200-nvl");
  ComputeOp op = gemm_op(Dtype::bf16, 8192, 8192, 8192);
  const double flops = 2.0 * 8192.0 * 8192.0 * 8192.0, measured = 684.78;
  const ComputeCost cool = gemm_cost(nvl, op);
  op.clock_scale = sustained_gemm_clock(nvl, {1.0, 0.0, 0.0});
  const ComputeCost full = gemm_cost(nvl, op);
  const double cool_tflops = flops / std::max(cool.math_s, cool.memory_s) / 1e12;
  const double full_tflops = flops / std::max(full.math_s, full.memory_s) / 1e12;
  std::printf(
      "H200 NVL 8192^3 bf16: measured %.1f TFLOP/s, predicted %.1f at full load (clock %.3f, %+.1f%%), "
      "%.1f cool (%+.1f%%)\n",
      measured, full_tflops, op.clock_scale, 100 * (full_tflops / measured - 1), cool_tflops,
      100 * (cool_tflops / measured - 1));
  EXPECT_NEAR(cool_tflops / measured, 1.0, 0.08);
}

}  // namespace
}  // namespace twinsim
