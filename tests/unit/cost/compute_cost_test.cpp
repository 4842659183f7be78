#include "sim/cost/compute_cost.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>

#include "models/layer_ops.hpp"
#include "tests/unit/cost/test_hardware.hpp"

namespace twinsim {
namespace {

double achieved_tflops(const GpuSpec& gpu, const ComputeOp& op) { return op.flops / op_time_s(gpu, op) / 1e12; }

TEST(GemmWaves, OneTileMoreThanAWaveCostsASecondWave) {
  // 12 x 9 = 108 tiles of 128x128 fill A100's 108 SMs exactly once; one more row of the
  // output adds 9 tiles, hence a second, nearly empty wave (NVIDIA Matrix Multiplication
  // Background guide, §3.2 wave quantization).
  EXPECT_DOUBLE_EQ(gemm_wave_utilization(108, 12 * 128, 9 * 128, 4096, {128}), 1.0);
  const double one_more = gemm_wave_utilization(108, 12 * 128 + 1, 9 * 128, 4096, {128});
  EXPECT_NEAR(one_more, (108.0 + 9.0 / 128) / 216, 1e-12);
}

// A Hopper library's tile choices (GpuSpec::gemm_tile_edges), by hand on 132 SMs: a batch of
// 256 tokens through a 4096 -> 12288 QKV product is 2 x 96 = 192 tiles of 128 x 128, two waves
// of which the second is half empty: 192 / 264. With 192-wide tiles along n it is 2 x 64 =
// 128 tiles, one wave: 128 / 132 (no other pair of 128, 192, 256 does better). A product
// narrower than a tile keeps its narrow tile whatever the choices.
TEST(GemmWaves, TheLibrarysTileChoicesFillTheWaves) {
  EXPECT_NEAR(gemm_wave_utilization(132, 256, 12288, 4096, {128}), 192.0 / 264, 1e-12);
  EXPECT_NEAR(gemm_wave_utilization(132, 256, 12288, 4096, {128, 192, 256}), 128.0 / 132, 1e-12);
  EXPECT_DOUBLE_EQ(gemm_wave_utilization(132, 64, 12288, 4096, {128, 192, 256}),
                   gemm_wave_utilization(132, 64, 12288, 4096, {128}));
}

TEST(GemmWaves, FewTilesSplitKToFillTheGpu) {
  // 4 tiles and k = 8192: split 27 ways (108 / 4), capped by k / 256 = 32: all SMs busy.
  EXPECT_DOUBLE_EQ(gemm_wave_utilization(108, 256, 256, 8192, {128}), 1.0);
  // k = 512 allows only 2 slices: 8 of 108 SMs work.
  EXPECT_NEAR(gemm_wave_utilization(108, 256, 256, 512, {128}), 8.0 / 108, 1e-12);
}

TEST(GemmCost, LargeGemmNearMeasuredCeilingSmallFarBelow) {
  const GpuSpec gpu = test::a100();
  // Large: within the range of A100 bf16 matmuls measured at 267.9 TFLOP/s best
  // (ml-engineering MAMF table); 8192^3 has 4096 tiles = 37.9 waves, little loss.
  const double big = achieved_tflops(gpu, gemm_op(Dtype::bf16, 8192, 8192, 8192));
  EXPECT_GT(big, 250);
  EXPECT_LT(big, 268);
  // Small GEMMs run far below peak: 512^3 fills 32 of 108 SMs and pays a launch.
  const double small = achieved_tflops(gpu, gemm_op(Dtype::bf16, 512, 512, 512));
  EXPECT_LT(small, 0.2 * 312);
  // Throughput grows with size.
  const double mid = achieved_tflops(gpu, gemm_op(Dtype::bf16, 2048, 2048, 2048));
  EXPECT_GT(mid, small);
  EXPECT_LT(mid, big);
}

TEST(GemmCost, DecodeGemvIsMemoryBound) {
  // One token through an 8192 x 8192 bf16 weight: 134,217,728 bytes of weight dominate;
  // at 0.85 x 2039 GB/s that is 77.4 us, plus the 4 us launch.
  const GpuSpec gpu = test::a100();
  const ComputeCost c = gemm_cost(gpu, gemm_op(Dtype::bf16, 1, 8192, 8192));
  EXPECT_TRUE(c.memory_bound());
  const double bytes = 2.0 * (8192.0 * 8192 + 8192 + 8192);
  EXPECT_NEAR(c.time_s(), bytes / (0.85 * 2039e9) + 4e-6, 1e-9);
  EXPECT_NEAR(c.time_s(), 81.5e-6, 0.2e-6);
}

TEST(ComputeCost, ElementwiseAndNormAreMemoryBound) {
  // GeLU over a 2048 x 49152 bf16 activation: read and write 2 x 201,326,592 bytes
  // (~8 FLOPs per element on the CUDA cores is far from the 19.5 TFLOP/s limit).
  const GpuSpec gpu = test::a100();
  ComputeOp gelu;
  gelu.kind = ComputeKind::elementwise;
  gelu.flops = 8.0 * 2048 * 49152;
  gelu.bytes = 2.0 * 2 * 2048 * 49152;
  const ComputeCost c = op_cost(gpu, gelu);
  EXPECT_TRUE(c.memory_bound());
  EXPECT_NEAR(c.time_s(), 402653184.0 / (0.85 * 2039e9) + 4e-6, 1e-9);
  ComputeOp norm = gelu;
  norm.kind = ComputeKind::norm;
  EXPECT_DOUBLE_EQ(op_time_s(gpu, norm), c.time_s());
}

TEST(ComputeCost, AttentionUsesFlashAttentionEfficiency) {
  // FlashAttention-2 on A100: forward up to 73% of peak, backward slower (Dao 2023).
  const GpuSpec gpu = test::a100();
  ComputeOp fwd;
  fwd.kind = ComputeKind::attention;
  fwd.flops = 1e12;
  fwd.bytes = 1e8;
  ComputeOp bwd = fwd;
  bwd.backward = true;
  EXPECT_NEAR(achieved_tflops(gpu, fwd), 0.73 * 312, 1.0);
  EXPECT_GT(op_time_s(gpu, bwd), op_time_s(gpu, fwd));
}

TEST(ComputeCost, PerKernelEfficiencyByPassAndBytes) {
  // a device where GeLU streams at 1% of the bandwidth forward and 2% backward below 1 MB,
  // 4% from 100 MB; LayerNorm listed forward only; everything else at memory_efficiency
  GpuSpec gpu = test::a100();
  gpu.kernel_launch_s = 0;
  gpu.kernel_efficiency["gelu"] = {{{1e6, 0.01}, {1e8, 0.04}}, {{1e6, 0.02}}};
  gpu.kernel_efficiency["layernorm"] = {{{1e6, 0.5}}, {}};
  ComputeOp op;
  op.kind = ComputeKind::elementwise;
  op.bytes = 1e6;
  op.kernel = "gelu";
  EXPECT_NEAR(op_time_s(gpu, op), 1e6 / (0.01 * gpu.hbm_bandwidth_Bps), 1e-15);
  op.bytes = 1e7;  // halfway in log(bytes): 2.5%
  EXPECT_NEAR(op_time_s(gpu, op), 1e7 / (0.025 * gpu.hbm_bandwidth_Bps), 1e-12);
  op.backward = true;
  EXPECT_NEAR(op_time_s(gpu, op), 1e7 / (0.02 * gpu.hbm_bandwidth_Bps), 1e-12);
  op.kernel = "layernorm";  // no backward curve: the forward one
  EXPECT_NEAR(op_time_s(gpu, op), 1e7 / (0.5 * gpu.hbm_bandwidth_Bps), 1e-12);
  op.kernel = "rope";  // not listed
  EXPECT_NEAR(op_time_s(gpu, op), 1e7 / (gpu.memory_efficiency * gpu.hbm_bandwidth_Bps), 1e-12);
}

// Attention over a KV cache (hardware/gpu_spec.hpp KvAttentionLatency), by hand on an A100
// (2,039 GB/s) at 0.9 of its bandwidth, 4 us launch, 2 us a call, 25 ns a (sequence, KV head):
// 100 MB in 64 x 32 items reads in 100e6 / (0.9 x 2039e9) = 54.49 us, over the items'
// 2048 x 25 ns = 51.2 us: 4 + 2 + 54.49 us; a batch of 256 x 32 short caches of the same
// bytes is bound by its 8192 items, 204.8 us: 210.8 us. Without the figures: the bytes alone.
TEST(ComputeCost, KvCacheAttentionIsBoundByItsBytesOrItsItems) {
  GpuSpec gpu = test::a100();
  gpu.kernel_launch_s = 4e-6;
  gpu.kernel_efficiency["kv_cache_attention"] = {{{1, 0.9}}, {}};
  ComputeOp op;
  op.kind = ComputeKind::attention;
  op.kernel = "kv_cache_attention";
  op.flops = 1e6;  // a few FLOPs a byte: the math side never binds
  op.bytes = 100e6;
  op.kv_items = 64 * 32;
  const double bytes_s = 100e6 / (0.9 * 2039e9);
  EXPECT_NEAR(op_time_s(gpu, op), 4e-6 + bytes_s, 1e-12);  // no latency figures: 0
  gpu.kv_attention_latency = {2e-6, 25e-9};
  EXPECT_NEAR(op_time_s(gpu, op), 6e-6 + bytes_s, 1e-12);
  op.kv_items = 256 * 32;
  EXPECT_NEAR(op_time_s(gpu, op), 6e-6 + 204.8e-6, 1e-12);
  op.kernel = "";  // a training step's flash attention: no cache, no floors
  gpu.attention_efficiency = {{{1, 0.5}}, {{1, 0.5}}};
  EXPECT_NEAR(op_time_s(gpu, op), 4e-6 + std::max(1e6 / (0.5 * gpu.peak(Dtype::bf16)), 100e6 / (gpu.memory_efficiency * 2039e9)), 1e-12);
}

// 16-bit data (a bf16 or fp16 run's kernels) takes kernel_efficiency_16bit where the
// device lists the kernel there, kernel_efficiency otherwise; fp32 data never does.
TEST(ComputeCost, SixteenBitDataUsesItsOwnKernelCurves) {
  GpuSpec gpu = test::a100();
  gpu.kernel_launch_s = 0;
  gpu.kernel_efficiency["gelu"] = {{{1e6, 0.2}}, {}};
  gpu.kernel_efficiency["rope"] = {{{1e6, 0.3}}, {}};
  gpu.kernel_efficiency_16bit["gelu"] = {{{1e6, 0.1}}, {}};
  ComputeOp op;
  op.kind = ComputeKind::elementwise;
  op.bytes = 1e6;
  op.kernel = "gelu";
  for (Dtype d : {Dtype::bf16, Dtype::fp16}) {
    op.dtype = d;
    EXPECT_NEAR(op_time_s(gpu, op), 1e6 / (0.1 * gpu.hbm_bandwidth_Bps), 1e-15) << to_string(d);
  }
  op.dtype = Dtype::fp32;
  EXPECT_NEAR(op_time_s(gpu, op), 1e6 / (0.2 * gpu.hbm_bandwidth_Bps), 1e-15);
  op.dtype = Dtype::bf16;
  op.kernel = "rope";  // no 16-bit curve: the fp32 one
  EXPECT_NEAR(op_time_s(gpu, op), 1e6 / (0.3 * gpu.hbm_bandwidth_Bps), 1e-15);
}

TEST(ComputeCost, MeasuredAttentionCurvesOverrideKernelDefaults) {
  GpuSpec gpu = test::a100();
  gpu.attention_efficiency.fwd = {{1e9, 0.2}};
  gpu.attention_efficiency.bwd = {{1e9, 0.1}};
  ComputeOp op;
  op.kind = ComputeKind::attention;
  op.flops = 1e12;
  EXPECT_NEAR(achieved_tflops(gpu, op), 0.2 * 312, 0.5);
  op.backward = true;
  EXPECT_NEAR(achieved_tflops(gpu, op), 0.1 * 312, 0.5);
  // a head width with its own curves uses them; any other width the general ones
  gpu.attention_efficiency_by_head_dim[32].fwd = {{1e9, 0.05}};
  op.head_dim = 32;
  EXPECT_NEAR(achieved_tflops(gpu, op), 0.05 * 312, 0.5);  // no bwd curve of its own: its fwd
  op.backward = false;
  EXPECT_NEAR(achieved_tflops(gpu, op), 0.05 * 312, 0.5);
  op.head_dim = 128;
  EXPECT_NEAR(achieved_tflops(gpu, op), 0.2 * 312, 0.5);
}

// A device with its own dgrad curve prices that pass with it; a pass without one (wgrad
// here) and the forward use gemm_efficiency.
TEST(ComputeCost, BackwardGemmPassesUseTheirOwnCurves) {
  GpuSpec gpu = test::a100();
  gpu.gemm_efficiency = {{1e9, 0.6}};
  gpu.gemm_dgrad_efficiency = {{1e9, 0.3}};
  ComputeOp op = gemm_op(Dtype::bf16, 8192, 8192, 8192);
  const double fwd = op_time_s(gpu, op);
  op.pass = GemmPass::dgrad;
  const double launch = gpu.kernel_launch_s;  // half the efficiency: twice the math time
  EXPECT_NEAR(op_time_s(gpu, op) - launch, 2 * (fwd - launch), 1e-9 * fwd);
  op.pass = GemmPass::wgrad;
  EXPECT_DOUBLE_EQ(op_time_s(gpu, op), fwd);
}

TEST(ComputeCost, CatalogCurveOverridesDefaultsAndMissingPeakThrows) {
  GpuSpec gpu = test::a100();
  gpu.gemm_efficiency = {{1e9, 0.3}, {1e12, 0.6}};
  // 8192^3 = 1.1e12 FLOPs: past the last point, 0.6 times the wave utilization.
  const ComputeOp op = gemm_op(Dtype::bf16, 8192, 8192, 8192);
  EXPECT_NEAR(gemm_efficiency(gpu, op.flops, op.m, op.n, op.k), 0.6 * 4096.0 / (38 * 108), 1e-12);
  EXPECT_THROW(op_time_s(gpu, gemm_op(Dtype::fp8, 1024, 1024, 1024)), std::invalid_argument);
}

// The reuse curve (GpuSpec::gemm_reuse_time), by hand: points at 1, 4 and 64 MiB with times
// 0.4, 0.5 and 1.0 of cold. Log time is linear in log bytes between two points: 2 MiB is
// half-way (in log bytes) from 1 to 4, so sqrt(0.4 x 0.5) = 0.44721; 16 MiB is half-way from 4
// to 64, so sqrt(0.5 x 1.0) = 0.70711. Below the first point its 0.4, above the last its 1.0;
// an unknown working set (0) and a device without the curve price cold (1).
TEST(GemmReuse, LogTimeInterpolatesInLogBytesAndHoldsItsEnds) {
  GpuSpec gpu = test::a100();
  EXPECT_DOUBLE_EQ(gemm_reuse_factor(gpu, 2 * 1048576.0), 1.0);
  constexpr double MiB = 1048576.0;
  gpu.gemm_reuse_time = {{1 * MiB, 0.4}, {4 * MiB, 0.5}, {64 * MiB, 1.0}};
  EXPECT_NEAR(gemm_reuse_factor(gpu, 2 * MiB), 0.447214, 1e-6);
  EXPECT_NEAR(gemm_reuse_factor(gpu, 16 * MiB), 0.707107, 1e-6);
  EXPECT_DOUBLE_EQ(gemm_reuse_factor(gpu, 4 * MiB), 0.5);
  EXPECT_DOUBLE_EQ(gemm_reuse_factor(gpu, 0.25 * MiB), 0.4);
  EXPECT_DOUBLE_EQ(gemm_reuse_factor(gpu, 512 * MiB), 1.0);
  EXPECT_DOUBLE_EQ(gemm_reuse_factor(gpu, 0), 1.0);
}

// A memory-bound GEMM's memory side is its cold time ("gemm" at 1% of 2,039 GB/s) times the
// curve at its working set: 1 MiB of operands take 51.43 us cold, 0.5 x that re-used in a 4 MiB
// set. The curve moves only the memory side: the math side is the same.
TEST(GemmReuse, TheMemorySideIsTheColdTimeAtTheWorkingSetsFactor) {
  GpuSpec gpu = test::a100();
  gpu.kernel_efficiency["gemm"] = {{{1, 0.01}}, {}};
  ComputeOp op = gemm_op(Dtype::bf16, 4, 512, 256);
  op.bytes = 1048576;
  op.kernel = kGemmKernel;
  op.working_set_bytes = 4 * 1048576.0;
  const ComputeCost cold = gemm_cost(gpu, op);
  EXPECT_NEAR(cold.memory_s, 1048576 / (0.01 * 2039e9), 1e-12);
  gpu.gemm_reuse_time = {{1048576.0, 0.4}, {4 * 1048576.0, 0.5}, {64 * 1048576.0, 1.0}};
  const ComputeCost warm = gemm_cost(gpu, op);
  EXPECT_NEAR(warm.memory_s, 0.5 * cold.memory_s, 1e-15);
  EXPECT_DOUBLE_EQ(warm.math_s, cold.math_s);
}

// The rows curve (GpuSpec::gemm_rows_time), by hand: 1 row 0.25, 4 rows 1, 16 rows 2.25 of the
// 4-row time. 8 rows are half-way (log) from 4 to 16: sqrt(1 x 2.25) = 1.5; 2 rows half-way from
// 1 to 4: sqrt(0.25 x 1) = 0.5; below 1 row the first point held, beyond 16 rows 1. A serving op
// of 4 experts x 8 rows a call (one tall GEMM of 32 rows on a device without grouped figures)
// reads its 1 MiB by calls of 8 rows: its memory side is 1.5 x the 4-row one (0.5 x cold at a
// 4 MiB set), not the tall GEMM's 32 rows'. A training GEMM (no working set) keeps its memory
// side, whatever its rows.
TEST(GemmRows, AServingGemmsMemorySideScalesByItsRowsACall) {
  GpuSpec gpu = test::a100();
  EXPECT_DOUBLE_EQ(gemm_rows_factor(gpu, 8), 1.0);
  gpu.gemm_rows_time = {{1, 0.25}, {4, 1.0}, {16, 2.25}};
  EXPECT_NEAR(gemm_rows_factor(gpu, 8), 1.5, 1e-12);
  EXPECT_NEAR(gemm_rows_factor(gpu, 2), 0.5, 1e-12);
  EXPECT_DOUBLE_EQ(gemm_rows_factor(gpu, 0.5), 0.25);
  EXPECT_DOUBLE_EQ(gemm_rows_factor(gpu, 16), 2.25);
  EXPECT_DOUBLE_EQ(gemm_rows_factor(gpu, 64), 1.0);  // a prefill's rows: not measured, not scaled
  gpu.kernel_efficiency["gemm"] = {{{1, 0.01}}, {}};
  gpu.gemm_reuse_time = {{1048576.0, 0.4}, {4 * 1048576.0, 0.5}, {64 * 1048576.0, 1.0}};
  ComputeOp op = gemm_op(Dtype::bf16, 8, 512, 256);
  op.groups = 4;
  op.fused_groups = true;
  op.flops *= 4;
  op.bytes = 1048576;
  op.kernel = kGemmKernel;
  op.working_set_bytes = 4 * 1048576.0;
  const double cold = 1048576 / (0.01 * 2039e9);
  EXPECT_NEAR(gemm_cost(gpu, op).memory_s, 1.5 * 0.5 * cold, 1e-15);
  op.working_set_bytes = 0;  // training's: no reuse, no rows
  EXPECT_NEAR(gemm_cost(gpu, op).memory_s, cold, 1e-15);
}

}  // namespace
}  // namespace twinsim
