// calibrate/fit: synthetic benchmark points made from known figures must give those
// figures back; the written hardware file must load through the scenario loader.
#include <gtest/gtest.h>

#include <cmath>

#include "calibrate/calibration.hpp"
#include "calibrate/machine.hpp"
#include "scenario/load.hpp"
#include "sim/cost/collective_cost.hpp"

namespace twinsim::calibrate {
namespace {

Stats exact(double s) { return stats_of({s * 0.99, s, s * 1.02}); }

TEST(Stats, MedianAndSpread) {
  const Stats s = stats_of({3, 1, 2, 10});
  EXPECT_DOUBLE_EQ(s.median, 2.5);
  EXPECT_DOUBLE_EQ(s.mean, 4.0);
  EXPECT_DOUBLE_EQ(s.spread(), 9 / 2.5);
}

TEST(Stats, RoundsKeepTheMedianRoundAndAllExtremes) {
  // a slow spell in round 2 (all its repeats 40% slower) does not move the point
  const Stats r1 = stats_of({1.0, 1.01, 1.02}), r2 = stats_of({1.40, 1.41, 1.43}), r3 = stats_of({0.98, 1.03, 1.05});
  const Stats s = merge_rounds({r1, r2, r3});
  EXPECT_DOUBLE_EQ(s.median, 1.03);  // the median of 1.01, 1.41, 1.03
  EXPECT_DOUBLE_EQ(s.min, 0.98);
  EXPECT_DOUBLE_EQ(s.max, 1.43);
  EXPECT_EQ(s.repeats, 9);
  EXPECT_NEAR(s.mean, (1.01 + (1.40 + 1.41 + 1.43) / 3 + (0.98 + 1.03 + 1.05) / 3) / 3, 1e-12);  // all rounds alike
  EXPECT_THROW(merge_rounds({}), std::invalid_argument);
}

TEST(FitLineRelative, RecoversALine) {
  // t = 5 us + x / 10 GB/s
  std::vector<double> x{1e3, 1e4, 1e5, 1e6, 1e7}, t;
  for (double b : x) t.push_back(5e-6 + b / 10e9);
  const LineFit f = fit_line_relative(x, t);
  EXPECT_NEAR(f.intercept, 5e-6, 1e-12);
  EXPECT_NEAR(1 / f.slope, 10e9, 1e3);
}

TEST(FitLineRelative, NeedsTwoDistinctPoints) {
  EXPECT_THROW(fit_line_relative({1}, {1}), std::invalid_argument);
  EXPECT_THROW(fit_line_relative({2, 2}, {1, 1}), std::invalid_argument);
}

TEST(FitMemory, BandwidthEfficiencyAndLaunch) {
  // memcpy at 20 GB/s; kernels at 15 GB/s with 1 us per call (efficiency 0.75)
  std::vector<MemoryPoint> pts;
  for (double b : {1e4, 1e5, 1e6, 1e7}) {
    pts.push_back({"copy", b, exact(b / 20e9)});
    for (const char* k : {"gelu", "layernorm", "adamw"}) pts.push_back({k, b, exact(1e-6 + b / 15e9)});
  }
  const MemoryFit f = fit_memory(pts);
  EXPECT_NEAR(f.copy_Bps, 20e9, 1e6);
  EXPECT_NEAR(f.efficiency, 0.75, 1e-6);
  EXPECT_NEAR(f.launch_s, 1e-6, 1e-12);
}

TEST(FitKernels, EachKernelAndPassGetsItsOwnCurve) {
  // memcpy at 20 GB/s, no launch cost; GeLU at 0.2 GB/s forward, 0.4 backward; LayerNorm
  // at 10 GB/s below 1 MB and 5 GB/s above (out of cache)
  std::vector<MemoryPoint> pts;
  for (double b : {1e4, 1e5, 1e6, 1e7}) {
    pts.push_back({"copy", b, exact(b / 20e9)});
    pts.push_back({"gelu", b, exact(b / 0.2e9)});
    pts.push_back({"gelu", 2 * b, exact(2 * b / 0.4e9), true});
    pts.push_back({"layernorm", b, exact(b / (b < 1e6 ? 10e9 : 5e9))});
  }
  MemoryFit memory;
  memory.copy_Bps = 20e9;
  const auto k = fit_kernels(pts, memory);
  ASSERT_EQ(k.size(), 2u);  // copy is the bandwidth itself, not a kernel
  for (const CurvePoint& p : k.at("gelu").fwd) EXPECT_NEAR(p.efficiency, 0.01, 1e-9);
  for (const CurvePoint& p : k.at("gelu").bwd) EXPECT_NEAR(p.efficiency, 0.02, 1e-9);
  EXPECT_NEAR(k.at("layernorm").fwd.front().efficiency, 0.5, 1e-9);
  EXPECT_NEAR(k.at("layernorm").fwd.back().efficiency, 0.25, 1e-9);
  EXPECT_TRUE(k.at("layernorm").bwd.empty());
}

// Serving attention: decode steps stream the KV cache at 4 GB/s whatever their GQA
// group (so by FLOPs they differ by the group), prefills reach 10% of a 50 GFLOP/s peak.
// The decode steps make the memory side, by bytes; the FLOPs curve is the prefills' alone.
TEST(FitKvAttention, DecodeStepsGiveTheMemorySidePrefillsTheFlopsCurve) {
  std::vector<AttentionPoint> pts;
  auto point = [](int seq, int kv_heads, double flops, double bytes, double seconds) {
    AttentionPoint p{4, seq, 4, 64, false, flops, exact(seconds)};
    p.kv_cache = true, p.kv_heads = kv_heads, p.bytes = bytes;
    return p;
  };
  for (double cached : {63.0, 255.0})
    for (int kv_heads : {4, 2}) {
      const double bytes = 4.0 * (2 * 4 * 4 * 64 + 4 * (cached + 2) * 2 * kv_heads * 64);
      pts.push_back(point(1, kv_heads, 4.0 * 4 * (cached + 1) * 4 * 64, bytes, bytes / 4e9));
    }
  for (double flops : {4e6, 1.6e7}) pts.push_back(point(64, 4, flops, 1e6, flops / 5e9));
  MemoryFit memory;
  memory.copy_Bps = 20e9;
  const KernelCurves kv = fit_kv_attention_memory(pts, memory);
  ASSERT_FALSE(kv.fwd.empty());
  for (const CurvePoint& p : kv.fwd) EXPECT_NEAR(p.efficiency, 0.2, 1e-9);  // 4 of memcpy's 20 GB/s
  EXPECT_TRUE(kv.bwd.empty());
  const std::vector<CurvePoint> flops = fit_kv_attention(pts, 50e9, 0);
  ASSERT_EQ(flops.size(), 2u);  // the prefills' two sizes, no decode step among them
  for (const CurvePoint& p : flops) EXPECT_NEAR(p.efficiency, 0.1, 1e-9);
  // MLA's absorbed decode steps (v_head_dim 64 of a latent 80) at 2 GB/s: their own curve,
  // 2 / 20 = 0.1 of memcpy, and none of the GQA curve's (still 0.2 at every size)
  for (double cached : {63.0, 255.0}) {
    const double bytes = 4.0 * (4 * 4 * 80 + 4 * 4 * 64 + 4 * (cached + 2) * 80);
    AttentionPoint p = point(1, 1, 0, bytes, bytes / 2e9);
    p.head_dim = 80, p.v_head_dim = 64;
    pts.push_back(p);
  }
  const KernelCurves mla = fit_kv_attention_memory(pts, memory, true);
  ASSERT_EQ(mla.fwd.size(), 2u);
  for (const CurvePoint& p : mla.fwd) EXPECT_NEAR(p.efficiency, 0.1, 1e-9);
  for (const CurvePoint& p : fit_kv_attention_memory(pts, memory).fwd) EXPECT_NEAR(p.efficiency, 0.2, 1e-9);
}

TEST(FitGemm, PeakIsTheBestShapeAndCurveIsRelative) {
  // 1 GFLOP at 100 GFLOP/s, 1 MFLOP at 25 GFLOP/s; two shapes of 8 MFLOP at 50 and 70
  const double launch = 1e-6;
  std::vector<GemmPoint> pts{{1000, 1000, 500, 1e9, exact(launch + 1e9 / 100e9)},
                             {100, 100, 50, 1e6, exact(launch + 1e6 / 25e9)},
                             {200, 200, 100, 8e6, exact(launch + 8e6 / 50e9)},
                             {100, 400, 100, 8e6, exact(launch + 8e6 / 70e9)}};
  const GemmFit f = fit_gemm(pts, launch);
  EXPECT_NEAR(f.peak_flops, 100e9, 1e3);
  ASSERT_EQ(f.curve.size(), 3u);
  EXPECT_NEAR(f.curve[0].efficiency, 0.25, 1e-9);
  EXPECT_NEAR(f.curve[1].efficiency, 0.60, 1e-9);  // median of 0.5 and 0.7
  EXPECT_NEAR(f.curve[2].efficiency, 1.0, 1e-9);
}

// Each pass of the linear layer gets its own curve, relative to the best rate of any pass:
// forward at 40 GFLOP/s, dgrad at 50 (the peak), wgrad at 25.
TEST(FitGemm, EachPassGetsItsOwnCurveAgainstOnePeak) {
  std::vector<GemmPoint> pts;
  for (std::int64_t n : {256, 1024}) {
    const double flops = 2.0 * 128 * n * 256;
    pts.push_back({128, n, 256, flops, exact(flops / 40e9), GemmPass::fwd});
    pts.push_back({128, n, 256, flops, exact(flops / 50e9), GemmPass::dgrad});
    pts.push_back({128, n, 256, flops, exact(flops / 25e9), GemmPass::wgrad});
  }
  const GemmFit f = fit_gemm(pts, 0);
  EXPECT_NEAR(f.peak_flops, 50e9, 1e-3 * 50e9);
  ASSERT_EQ(f.curve.size(), 2u);
  ASSERT_EQ(f.dgrad.size(), 2u);
  ASSERT_EQ(f.wgrad.size(), 2u);
  for (const CurvePoint& p : f.curve) EXPECT_NEAR(p.efficiency, 0.8, 1e-9);
  for (const CurvePoint& p : f.dgrad) EXPECT_NEAR(p.efficiency, 1.0, 1e-9);
  for (const CurvePoint& p : f.wgrad) EXPECT_NEAR(p.efficiency, 0.5, 1e-9);
}

TEST(FitGemm, OneLuckyShapeDoesNotBendTheCurve) {
  // 40% of the peak everywhere but one shape that ran at the full 100 GFLOP/s
  std::vector<GemmPoint> pts;
  for (double flops : {1e6, 2e6, 4e6, 8e6, 16e6})
    pts.push_back({1, 1, 1, flops, exact(flops / (flops == 4e6 ? 100e9 : 40e9))});
  const GemmFit f = fit_gemm(pts, 0);
  EXPECT_NEAR(f.peak_flops, 100e9, 1e3);
  for (const CurvePoint& p : f.curve) EXPECT_NEAR(p.efficiency, 0.4, 1e-9);
}

// The 16-bit path's peak: fp32's times the median of fp32's time over bf16's on the
// shapes measured both ways; the 16-bit points leave the fp32 peak and curves alone.
TEST(FitGemm, SixteenBitPeakIsTheMedianSpeedAgainstFp32) {
  std::vector<GemmPoint> pts;
  const double ratios[] = {0.8, 0.9, 1.2};  // bf16 runs at these fractions of fp32's rate
  for (int i = 0; i < 3; ++i) {
    const std::int64_t n = 256 << i;
    const double flops = 2.0 * 128 * n * 256;
    pts.push_back({128, n, 256, flops, exact(flops / 50e9), GemmPass::fwd, Dtype::fp32});
    pts.push_back({128, n, 256, flops, exact(flops / (50e9 * ratios[i])), GemmPass::fwd, Dtype::bf16});
  }
  pts.push_back({512, 512, 512, 1e9, exact(1e9 / 400e9), GemmPass::fwd, Dtype::bf16});  // no fp32 twin: not a ratio
  const GemmFit f = fit_gemm(pts, 0);
  EXPECT_NEAR(f.peak_flops, 50e9, 1e-6 * 50e9);  // the 400 GFLOP/s bf16 point is not the fp32 peak
  for (const CurvePoint& p : f.curve) EXPECT_NEAR(p.efficiency, 1.0, 1e-9);
  ASSERT_EQ(f.peak_16bit.count(Dtype::bf16), 1u);
  EXPECT_NEAR(f.peak_16bit.at(Dtype::bf16), 0.9 * 50e9, 1e-6 * 50e9);
  EXPECT_EQ(f.peak_16bit.count(Dtype::fp16), 0u);
}

// Kernels on bf16 data are fitted apart from the fp32 ones (kernel_efficiency_16bit) and
// stay out of the memory fit's rates.
TEST(FitKernels, SixteenBitPointsAreTheirOwnCurves) {
  std::vector<MemoryPoint> pts;
  for (double b : {1e4, 1e6}) {
    pts.push_back({"copy", b, exact(b / 20e9)});
    pts.push_back({"gelu", b, exact(b / 10e9)});
    pts.push_back({"gelu", b / 2, exact(b / 10e9), false, true});  // half the bytes in the same time
  }
  const MemoryFit memory = fit_memory(pts);
  EXPECT_NEAR(memory.efficiency, 0.5, 1e-6);  // fp32 gelu's 10 of copy's 20 GB/s only
  const auto fp32 = fit_kernels(pts, memory);
  const auto half = fit_kernels(pts, memory, true);
  ASSERT_EQ(half.count("gelu"), 1u);
  for (const CurvePoint& p : fp32.at("gelu").fwd) EXPECT_NEAR(p.efficiency, 0.5, 1e-6);
  for (const CurvePoint& p : half.at("gelu").fwd) EXPECT_NEAR(p.efficiency, 0.25, 1e-6);
}

// A ring on 2 ranks (Thakur et al. 2005 §4): all-reduce 2 latency steps and bus factor 1,
// all-gather/reduce-scatter 1 step and factor 1/2, send/recv 1 step and factor 1.
// Collectives (not send/recv) reach `eff_small` of the bandwidth below 100 kB.
std::vector<CommPoint> ring_points(double bw, double lat, double eff_small) {
  std::vector<CommPoint> pts;
  for (double b : {4096.0, 65536.0, 1048576.0}) {
    const double eff = b < 1e5 ? eff_small : 1.0;
    pts.push_back({"all_reduce", 2, b, exact(2 * lat + b / (bw * eff))});
    pts.push_back({"all_gather", 2, b, exact(lat + 0.5 * b / (bw * eff))});
    pts.push_back({"send_recv", 2, b, exact(lat + b / bw)});
  }
  return pts;
}

TEST(FitLink, LatencyBoundPointsOnlyIsAnError) {
  std::vector<CommPoint> pts{{"send_recv", 2, 8, exact(1e-6)}, {"send_recv", 2, 16, exact(1e-6 + 1e-12)}};
  EXPECT_THROW(fit_link(pts), std::invalid_argument);
}

TEST(FitLink, RecoversBandwidthLatencyAndCurve) {
  const LinkFit f = fit_link(ring_points(8e9, 2e-6, 1.0));
  EXPECT_NEAR(f.latency_s, 2e-6, 1e-9);
  EXPECT_NEAR(f.bandwidth_Bps, 8e9, 1e3);
  ASSERT_EQ(f.curve.size(), 3u);
  for (const CurvePoint& p : f.curve) EXPECT_NEAR(p.efficiency, 1.0, 1e-6);
}

// Expert parallelism's all-to-all gets its own curve: on 2 ranks it moves half its buffer
// (the other rank's part) after one message's latency; at a quarter of the link's rate below
// 100 kB and the full rate above, its curve says 0.25 then 1, whatever the others do.
TEST(FitLink, AllToAllGetsItsOwnCurve) {
  std::vector<CommPoint> pts = ring_points(8e9, 1e-6, 1.0);
  for (double b : {4096.0, 65536.0, 1048576.0})
    pts.push_back({"all_to_all", 2, b, exact(1e-6 + 0.5 * b / (8e9 * (b < 1e5 ? 0.25 : 1.0)))});
  const LinkFit f = fit_link(pts);
  ASSERT_EQ(f.by_op.count("all_to_all"), 1u);
  const std::vector<CurvePoint>& own = f.by_op.at("all_to_all");
  ASSERT_EQ(own.size(), 3u);
  EXPECT_NEAR(own[0].efficiency, 0.25, 1e-6);
  EXPECT_NEAR(own[2].efficiency, 1.0, 1e-6);
  EXPECT_NEAR(f.by_op.at("all_gather")[0].efficiency, 1.0, 1e-6);
}

TEST(FitLink, SmallMessagesGetALowerEfficiency) {
  const LinkFit f = fit_link(ring_points(8e9, 1e-6, 0.5));
  EXPECT_NEAR(f.latency_s, 1e-6, 1e-9);
  EXPECT_NEAR(f.curve[0].efficiency, 0.5, 1e-6);  // median of all-reduce 0.5, all-gather 0.5, send/recv 1
  EXPECT_NEAR(f.curve[2].efficiency, 1.0, 1e-6);
  // each collective apart: send/recv reaches the full rate at every size, the others half below 100 kB
  EXPECT_NEAR(f.by_op.at("send_recv").front().efficiency, 1.0, 1e-6);
  EXPECT_NEAR(f.by_op.at("all_gather").front().efficiency, 0.5, 1e-6);
  EXPECT_NEAR(f.by_op.at("all_gather").back().efficiency, 1.0, 1e-6);
}

TEST(FitAll, LaunchCostNeverExceedsHalfTheFastestCall) {
  // kernels whose line fits say 5 us per call, and a GEMM that took 2 us in all: taking
  // 5 us out of it would make its rate (and the peak) absurd
  Calibration c;
  for (double b : {1e4, 1e6}) {
    c.memory.push_back({"copy", b, exact(b / 20e9)});
    c.memory.push_back({"gelu", b, exact(5e-6 + b / 10e9)});
  }
  c.gemm = {{32, 32, 32, 65536, exact(2e-6)}, {512, 512, 512, 2.0 * 512 * 512 * 512, exact(2.0 * 512 * 512 * 512 / 80e9)}};
  const Fitted f = fit_all(c);
  EXPECT_LE(f.memory.launch_s, 0.5 * 2e-6 * 0.99 + 1e-15);
  EXPECT_NEAR(f.gemm.peak_flops, 80e9, 80e9 * 0.02);
}

// The offloaded optimizer's host side (host_path.hpp): memcpy out of cache moving 1 MB in
// 100 us and 4 MB in 400 us is 10 GB/s one way whatever "copy" (in cache) says; AdamW over
// 1M fp32 parameters (28 MB as the simulator counts them) in 6 ms is 6 ns a parameter, over
// 4M in 24 ms the same; its bf16-gradient points and the other kernels are not AdamW's rate.
TEST(FitHostPath, CopyRateOneWayAndAdamTimePerParameter) {
  std::vector<MemoryPoint> points = {
      {"copy", 2e6, exact(2e6 / 60e9)},    {"copy", 8e6, exact(8e6 / 60e9)},           {"sgd", 64e6, exact(4e-3)},
      {kHostCopyKernel, 2e6, exact(1e-4)}, {kHostCopyKernel, 8e6, exact(4e-4)},        {"adamw", 28e6, exact(6e-3)},
      {"adamw", 112e6, exact(24e-3)},      {"adamw", 26e6, exact(20e-3), false, true}, {"sgd", 16e6, exact(1e-3)}};
  const HostPathFit f = fit_host_path(points);
  EXPECT_NEAR(f.copy_Bps, 10e9, 1e3);
  EXPECT_NEAR(f.adam_s_per_param, 6e-9, 1e-15);
  // nor is the copy out of cache a kernel of the op list, or part of memcpy's bandwidth
  // (kernels: AdamW at 28 MB / 6 ms = 4.67 GB/s and SGD at 16 GB/s of memcpy's 60, median 0.172;
  // with the 20 GB/s copy out of cache among them it would be SGD's 0.267)
  const MemoryFit memory = fit_memory(points);
  EXPECT_NEAR(memory.efficiency, 0.5 * (28e6 / 6e-3 + 16e9) / 60e9, 1e-3);
  EXPECT_EQ(fit_kernels(points, memory).count(kHostCopyKernel), 0u);
  EXPECT_TRUE(fit_host_path({{"copy", 2e6, exact(1e-4)}}).copy_Bps == 0);
}

// Pool-adjacent-violators by hand. {1, 3, 2, 2, 5, 4}: 3 > 2 pools to 2.5, which is above
// the next 2, so the three pool to (3 + 2 + 2) / 3 = 7/3 (above 1: kept); 5 > 4 pools to 4.5.
// {4, 3, 1}: 4 > 3 pools to 3.5, above 1, so all three pool to 8/3. An ordered input stays.
TEST(FitIsotonic, PoolsEachRunOfViolatorsIntoItsMean) {
  const std::vector<double> got = isotonic_non_decreasing({1, 3, 2, 2, 5, 4});
  const std::vector<double> want = {1, 7.0 / 3, 7.0 / 3, 7.0 / 3, 4.5, 4.5};
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12) << i;
  for (double v : isotonic_non_decreasing({4, 3, 1})) EXPECT_NEAR(v, 8.0 / 3, 1e-12);
  EXPECT_EQ(isotonic_non_decreasing({1, 2, 2, 7}), (std::vector<double>{1, 2, 2, 7}));
  EXPECT_TRUE(isotonic_non_decreasing({}).empty());
}

// The cold level of gemm_reuse_time is the fitted largest set's: cold sets that dip (42 us at
// 24 MiB, 40 at 64) pool to 41 us, so the 1 MiB set's 10 us gives 10/41 and both cold sets 1.
TEST(FitCacheReuse, ColdLevelPoolsColdSetsThatDip) {
  constexpr double MiB = 1048576.0;
  const std::vector<MemoryPoint> points = {{kGemmReuseKernel, 1 * MiB, exact(10e-6)},
                                           {kGemmReuseKernel, 64 * MiB, exact(40e-6)},
                                           {kGemmReuseKernel, 24 * MiB, exact(42e-6)}};
  const std::vector<CurvePoint> reuse = reuse_time_curve(points);
  ASSERT_EQ(reuse.size(), 3u);
  EXPECT_NEAR(reuse[0].efficiency, 10.0 / 41, 1e-12);
  EXPECT_NEAR(reuse[1].efficiency, 1.0, 1e-12);
  EXPECT_DOUBLE_EQ(reuse[1].size, 24 * MiB);
  EXPECT_NEAR(reuse[2].efficiency, 1.0, 1e-12);
}

// gemm_rows_time: the rows points (the reuse GEMM's 1024 x 256 weights) by rows over the 4-row
// time. A point's bytes are 4 (m 256 + 1024 x 256 + m 1024): 1 row 1,053,696 B, 4 rows 1,069,056,
// 8 rows 1,089,536. Times 3, 12 and 18 us give 0.25, 1 and 1.5, fewest rows first; other kernels'
// points are not rows points; without a 4-row point there is no curve.
TEST(FitCacheReuse, RowsCurveIsEachRowCountsTimeOverFourRows) {
  const std::vector<MemoryPoint> points = {{kGemmRowsKernel, 1089536, exact(18e-6)},
                                           {kGemmRowsKernel, 1053696, exact(3e-6)},
                                           {kGemmReuseKernel, 1069056, exact(99e-6)},
                                           {kGemmRowsKernel, 1069056, exact(12e-6)}};
  const std::vector<CurvePoint> rows = rows_time_curve(points);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_DOUBLE_EQ(rows[0].size, 1);
  EXPECT_NEAR(rows[0].efficiency, 0.25, 1e-12);
  EXPECT_DOUBLE_EQ(rows[1].size, 4);
  EXPECT_NEAR(rows[1].efficiency, 1.0, 1e-12);
  EXPECT_DOUBLE_EQ(rows[2].size, 8);
  EXPECT_NEAR(rows[2].efficiency, 1.5, 1e-12);
  EXPECT_TRUE(rows_time_curve({points[0], points[1]}).empty());
}

// The reuse sweep (cache_reuse.hpp): a 4-row GEMM rotated through working sets of weights.
// Warm 10 us a call at 1 MiB, cold 40 us at 64 MiB: half-way on a log scale is
// sqrt(10 x 40) = 20 us, first passed between 8 MiB (16 us) and 16 MiB (25 us): log 20 lies
// ln(20/16) / ln(25/16) = 0.5 of the way, so at sqrt(8 x 16) = 11.31 MiB. A later set back
// under 20 us (noise at 24 MiB) does not move it.
TEST(FitCacheReuse, HalfWaySetIsInterpolatedBetweenWorkingSets) {
  constexpr double MiB = 1048576.0;
  std::vector<MemoryPoint> points;
  const std::vector<std::pair<double, double>> sets = {{1, 10e-6},  {2, 10.5e-6}, {4, 11e-6},  {8, 16e-6},
                                                       {16, 25e-6}, {24, 19e-6},  {32, 38e-6}, {64, 40e-6}};
  for (auto [mib, s] : sets) points.push_back({kGemmReuseKernel, mib * MiB, exact(s)});
  points.push_back({"copy", 1e6, exact(1e6 / 20e9)});  // not a reuse point
  EXPECT_NEAR(warm_working_set_bytes(points), std::sqrt(8.0 * 16.0) * MiB, 1.0);
  // no cache to see (every set alike): the largest set; fewer than two points: none
  std::vector<MemoryPoint> flat = {{kGemmReuseKernel, 64 * MiB, exact(10e-6)},
                                   {kGemmReuseKernel, 2 * MiB, exact(10e-6)}};
  EXPECT_DOUBLE_EQ(warm_working_set_bytes(flat), 64 * MiB);
  EXPECT_DOUBLE_EQ(warm_working_set_bytes({{kGemmReuseKernel, 2 * MiB, exact(10e-6)}}), 0);
  // the file's gemm_reuse_time: each set's time over the 64 MiB set's 40 us, 10/40 = 0.25 up to
  // 38/40 = 0.95; the 24 MiB dip (19 us after 25) pools with the 16 MiB set: (25 + 19) / 2 = 22 us,
  // 22/40 = 0.55 at both (a larger set runs no warmer)
  const std::vector<CurvePoint> reuse = reuse_time_curve(points);
  const std::vector<double> want = {0.25, 0.2625, 0.275, 0.4, 0.55, 0.55, 0.95, 1.0};
  ASSERT_EQ(reuse.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_DOUBLE_EQ(reuse[i].size, sets[i].first * MiB);
    EXPECT_NEAR(reuse[i].efficiency, want[i], 1e-12) << sets[i].first << " MiB";
  }
  EXPECT_TRUE(reuse_time_curve({{kGemmReuseKernel, 2 * MiB, exact(10e-6)}}).empty());
  // the file's cache_MiB: the warm set, at most the sysfs L3; the reuse points are no kernel curve
  Calibration c;
  c.memory = points;
  c.memory.push_back({"copy", 1e7, exact(1e7 / 20e9)});
  c.memory.push_back({"gelu", 1e6, exact(1e6 / 10e9)});
  c.memory.push_back({"gelu", 1e7, exact(1e7 / 10e9)});
  c.gemm = {{64, 64, 64, 2.0 * 64 * 64 * 64, exact(2.0 * 64 * 64 * 64 / 20e9)}};
  c.cache_MiB = 32;
  EXPECT_NEAR(fit_all(c).cache_bytes, std::sqrt(8.0 * 16.0) * MiB, 1.0);
  EXPECT_EQ(fit_all(c).kernels.count(kGemmReuseKernel), 0u);
  c.cache_MiB = 4;
  EXPECT_DOUBLE_EQ(fit_all(c).cache_bytes, 4 * MiB);
  c.memory.erase(c.memory.begin(), c.memory.begin() + static_cast<long>(sets.size()));  // no reuse sweep: sysfs's
  EXPECT_DOUBLE_EQ(fit_all(c).cache_bytes, 4 * MiB);
}

TEST(HardwareYaml, LoadsAsAnInlineClusterWithTheFittedFigures) {
  Calibration c;
  c.machine = "Test CPU 9000, 2 cores, load average 0.1 0.1 0.1";
  c.cpu_model = "Test CPU 9000";
  c.memory_GiB = 16;
  for (double b : {1e5, 1e6}) {
    c.memory.push_back({"copy", b, exact(b / 20e9)});
    c.memory.push_back({"gelu", b, exact(1e-6 + b / 10e9)});
    c.memory.push_back({"gelu", 2 * b, exact(1e-6 + 2 * b / 5e9), true});  // backward at half the rate
    c.memory.push_back({kHostCopyKernel, b, exact(b / 2 / 8e9)});          // out of cache: 8 GB/s one way
    c.memory.push_back({"quantize", b, exact(1e-6 + b / 1e9)});            // int8 compression: 1 GB/s of its bytes
  }
  // AdamW over 10M and 100M parameters at 2.8 ns each (gelu's 10 GB/s on its 28 bytes, its 1 us a call)
  for (double params : {1e7, 1e8}) c.memory.push_back({"adamw", 28 * params, exact(1e-6 + params * 2.8e-9)});
  // the reuse sweep: 10 us a call up to 8 MiB of weights, 40 us from 32 MiB; half-way (20 us)
  // at sqrt(8 x 32) = 16 MiB
  c.cache_MiB = 32;
  c.reuse_ranks = 2;  // the reuse sweep ran in 2 processes at once
  for (auto [mib, t] : {std::pair{2.0, 10e-6}, {8.0, 10e-6}, {32.0, 40e-6}, {64.0, 40e-6}})
    c.memory.push_back({kGemmReuseKernel, mib * 1048576, exact(t)});
  // the same sweep alone (reuse_sweeps_alone): warm up to 32 MiB, cold at 64
  for (auto [mib, t] : {std::pair{2.0, 10e-6}, {8.0, 10e-6}, {32.0, 10e-6}, {64.0, 40e-6}})
    c.memory.push_back({kGemmReuseAloneKernel, mib * 1048576, exact(t)});
  c.attention = {{2, 64, 4, 64, false, 1e8, exact(1e-6 + 1e8 / 8e9)}, {2, 64, 4, 64, true, 2e8, exact(1e-6 + 2e8 / 4e9)},
                 {2, 64, 8, 32, false, 1e8, exact(1e-6 + 1e8 / 4e9)}};  // heads of 32 at half the rate
  c.gemm = {{64, 64, 64, 2.0 * 64 * 64 * 64, exact(1e-6 + 2.0 * 64 * 64 * 64 / 20e9)},
            {512, 512, 512, 2.0 * 512 * 512 * 512, exact(1e-6 + 2.0 * 512 * 512 * 512 / 80e9)},
            {512, 512, 512, 2.0 * 512 * 512 * 512, exact(1e-6 + 2.0 * 512 * 512 * 512 / 40e9), GemmPass::dgrad}};
  c.comm = ring_points(8e9, 2e-6, 0.5);
  c.cpu_layout = "2 CPUs, 1 thread per core, L3 32 MiB";
  // alone, the GEMMs ran 1.8-2.2x and a copy 1.25x faster than beside a busy core (issue 61)
  c.sharing.busy_processes = 2;
  c.sharing.points = {{"gemm a", true, exact(1e-3), exact(2e-3)},
                      {"gemm b", true, exact(1e-3), exact(1.8e-3)},
                      {"gemm c", true, exact(1e-3), exact(2.2e-3)},
                      {"copy", false, exact(1e-3), exact(1.25e-3)}};
  fit_core_sharing(c.sharing);
  c.op_host = exact(0.3e-6);  // the executor's empty op scopes: 0.3 us an op (op_host.hpp)
  EXPECT_DOUBLE_EQ(c.sharing.gemm_speedup, 2.0);
  EXPECT_DOUBLE_EQ(c.sharing.memory_speedup, 1.25);
  const Fitted f = fit_all(c);
  const std::string yaml = hardware_yaml(c, f, "host");
  // the CPU model and layout are read back from the header (simulate and validate warn on another CPU)
  EXPECT_EQ(recorded_cpu_model(yaml.substr(0, yaml.find("\ngpu:"))), "Test CPU 9000");
  EXPECT_EQ(recorded_cpu_layout(yaml.substr(0, yaml.find("\ngpu:"))), c.cpu_layout);
  std::string indented;
  for (std::size_t i = 0, j; i < yaml.size(); i = j + 1) {
    j = yaml.find('\n', i);
    indented += "  " + yaml.substr(i, j - i) + "\n";
  }
  const Scenario s = load_scenario_text(
      "model: tiny-gpt\ncluster:\n" + indented +
      "training: {seq_len: 64, global_batch: 8, micro_batch: 2, precision: fp32}\nplan: {tp: 2, pp: 1, dp: 1}\n");
  EXPECT_NEAR(s.cluster.gpu.peak(Dtype::fp32), 80e9, 80e9 * 1e-4);  // printed with 5 decimals of TFLOP/s
  EXPECT_NEAR(s.cluster.gpu.hbm_bandwidth_Bps, 20e9, 1e6);
  EXPECT_NEAR(s.cluster.gpu.memory_efficiency, 0.5, 1e-3);
  // one op's fixed cost: the kernels' 1 us intercept (gelu's, quantize's, attention's) plus the
  // executor's 0.3 us of host time an op = 1.3 us
  EXPECT_NEAR(s.cluster.gpu.kernel_launch_s, 1.3e-6, 1e-9);
  EXPECT_EQ(s.cluster.gpu.cache_bytes, 16 * 1048576);  // the reuse sweep's half-way set, under the 32 MiB L3
  // and its times over the cold 40 us: 0.25 at 2 and 8 MiB, 1 from 32 MiB
  ASSERT_EQ(s.cluster.gpu.gemm_reuse_time.size(), 4u);
  EXPECT_DOUBLE_EQ(s.cluster.gpu.gemm_reuse_time[1].size, 8 * 1048576.0);
  EXPECT_DOUBLE_EQ(s.cluster.gpu.gemm_reuse_time[1].efficiency, 0.25);
  EXPECT_DOUBLE_EQ(s.cluster.gpu.gemm_reuse_time[2].efficiency, 1.0);
  // the alone sweep's curve beside it: 10 us over the cold 40 us up to 32 MiB; not a kernel's rate
  ASSERT_EQ(s.cluster.gpu.gemm_reuse_time_alone.size(), 4u);
  EXPECT_DOUBLE_EQ(s.cluster.gpu.gemm_reuse_time_alone[2].size, 32 * 1048576.0);
  EXPECT_DOUBLE_EQ(s.cluster.gpu.gemm_reuse_time_alone[2].efficiency, 0.25);
  EXPECT_DOUBLE_EQ(s.cluster.gpu.gemm_reuse_time_alone[3].efficiency, 1.0);
  EXPECT_EQ(f.kernels.count(kGemmReuseAloneKernel), 0u);
  // the sweep's 2 processes are a comment only (not applied, calibration.cpp): the curve as measured
  EXPECT_EQ(s.cluster.gpu.gemm_reuse_ranks, 0);
  EXPECT_EQ(s.cluster.gpu.gemm_reuse_set_scale, 1.0);
  EXPECT_EQ(s.cluster.gpu.gemm_efficiency.size(), 2u);
  EXPECT_NEAR(s.cluster.gpu.gemm_efficiency.front().efficiency, 0.25, 1e-3);
  ASSERT_EQ(s.cluster.gpu.gemm_dgrad_efficiency.size(), 1u);  // dgrad at half the forward's 80 GFLOP/s
  EXPECT_NEAR(s.cluster.gpu.gemm_dgrad_efficiency.front().efficiency, 0.5, 1e-3);
  EXPECT_TRUE(s.cluster.gpu.gemm_wgrad_efficiency.empty());
  EXPECT_NEAR(s.cluster.intra_node.latency_s, 2e-6, 1e-9);
  EXPECT_NEAR(s.cluster.intra_node.bandwidth_Bps, 8e9, 8e6);
  ASSERT_EQ(s.cluster.intra_node.efficiency.size(), 3u);
  EXPECT_NEAR(s.cluster.intra_node.efficiency.front().efficiency, 0.5, 1e-3);
  EXPECT_EQ(s.cluster.gpus_per_node, 64);
  // a 2-rank group is priced at the calls' measured times: the 4 KiB all-reduce of ring_points,
  // 2 x 2 us + 4096 B / (8 GB/s x 0.5) = 5.024 us (calibrate/measured_busbw.hpp)
  EXPECT_NEAR(collective_time_s(s.cluster, CollectiveOp::all_reduce, {2, 2}, 4096), 5.024e-6, 1e-10);
  // the offloaded optimizer's host: copies out of cache, the CPU AdamW's time a parameter, and
  // the machine's memcpy rate as the DRAM's (each of the 64 "GPUs" a share, as a node's)
  EXPECT_NEAR(s.cluster.host.h2d_Bps, 8e9, 1e6);
  EXPECT_NEAR(s.cluster.host.d2h_Bps, 8e9, 1e6);
  EXPECT_NEAR(s.cluster.host.adam_s_per_param, 2.8e-9, 1e-12);
  EXPECT_NEAR(s.cluster.host.memory_bandwidth_Bps * 64, 20e9, 64e6);
  // the int8 compressor's rate, as the quantise passes' curve: 1 GB/s of memcpy's 20
  EXPECT_NEAR(s.cluster.gpu.kernel_efficiency.at("quantize").fwd.back().efficiency, 0.05, 1e-3);
  // GeLU at 10 GB/s of memcpy's 20 forward, 5 backward; attention at 10% and 5% of the 80 GFLOP/s peak
  const PassCurves& gelu = s.cluster.gpu.kernel_efficiency.at("gelu");
  ASSERT_EQ(gelu.fwd.size(), 2u);
  EXPECT_NEAR(gelu.fwd.back().efficiency, 0.5, 1e-3);
  EXPECT_NEAR(gelu.bwd.back().efficiency, 0.25, 1e-3);
  EXPECT_NEAR(s.cluster.gpu.attention_efficiency.fwd.front().efficiency, 0.075, 1e-3);  // median of 0.1 and 0.05
  const auto& by_width = s.cluster.gpu.attention_efficiency_by_head_dim;
  ASSERT_EQ(by_width.size(), 2u);
  EXPECT_NEAR(by_width.at(64).fwd.front().efficiency, 0.1, 1e-3);
  EXPECT_NEAR(by_width.at(32).fwd.front().efficiency, 0.05, 1e-3);
  EXPECT_TRUE(by_width.at(32).bwd.empty());
  EXPECT_NEAR(s.cluster.gpu.attention_efficiency.bwd.front().efficiency, 0.05, 1e-3);
  // the same file under a one-rank plan: the rank alone on the machine, the speedups applied
  const Scenario alone = load_scenario_text(
      "model: tiny-gpt\ncluster:\n" + indented +
      "training: {seq_len: 64, global_batch: 8, micro_batch: 2, precision: fp32}\nplan: {tp: 1, pp: 1, dp: 1}\n");
  EXPECT_NEAR(alone.cluster.gpu.peak(Dtype::fp32), 160e9, 160e9 * 1e-4);
  EXPECT_NEAR(alone.cluster.gpu.hbm_bandwidth_Bps, 25e9, 2e6);
}

// Files written before the `# cpu_model:` line: the model is the machine line's start.
TEST(RecordedCpuModel, FromTheMachineLineOfOlderFiles) {
  EXPECT_EQ(recorded_cpu_model("# host: written by `twinsim calibrate`\n# AMD EPYC, 2 cores, load average 1.07 1.64 1.75, "
                               "kernels timed as 1 of 2 busy processes\n"),
            "AMD EPYC");
  EXPECT_EQ(recorded_cpu_model("# Intel(R) Xeon(R) CPU @ 2.20GHz, 16 cores, load average 0 0 0\n# cpu_model: Intel Xeon\n"),
            "Intel Xeon");
  EXPECT_EQ(recorded_cpu_model("# written by hand\n"), "");
  EXPECT_FALSE(cpu_model().empty());
}

}  // namespace
}  // namespace twinsim::calibrate
