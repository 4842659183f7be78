// A fused grouped GEMM's rate by its expert's shape (GpuSpec::grouped_gemm_scale_by_expert_weights,
// sim/cost/compute_cost grouped_gemm_shape_scale): the rows curve's fraction times a factor keyed
// by one expert's weight elements N x K, log-linear between points, the ends held. Hand-derived
// on the datasheet A100 with made-up curves (the catalog's figures are judged elsewhere:
// tests/unit/inference/fused_moe_kernel_test.cpp).
#include <gtest/gtest.h>

#include "sim/cost/compute_cost.hpp"
#include "tests/unit/cost/test_hardware.hpp"

namespace twinsim {
namespace {

GpuSpec gpu_with_shape_scale() {
  GpuSpec g = test::a100();
  g.grouped_gemm_efficiency_by_rows = {{64, 0.2}, {256, 0.4}};
  g.grouped_gemm_scale_by_expert_weights = {{1e6, 0.5}, {4e6, 1.0}};
  return g;
}

// 8 experts of 256 rows each, n 1,000, k 2,000 (2e6 weight elements), bf16, fused.
ComputeOp eight_experts(std::int64_t n, std::int64_t k) {
  ComputeOp op;
  op.kind = ComputeKind::gemm;
  op.dtype = Dtype::bf16;
  op.m = 256, op.n = n, op.k = k;
  op.groups = 8;
  op.fused_groups = true;
  op.flops = 8.0 * 2 * 256 * static_cast<double>(n) * static_cast<double>(k);
  op.bytes = 8.0 * static_cast<double>(n) * static_cast<double>(k) * 2;  // the weights only
  return op;
}

TEST(GroupedGemmShape, FactorInterpolatesInLogElementsAndHoldsItsEnds) {
  const GpuSpec gpu = gpu_with_shape_scale();
  // 2e6 is halfway from 1e6 to 4e6 in log: 0.5 + 0.5 x (1.0 - 0.5) = 0.75
  EXPECT_NEAR(grouped_gemm_shape_scale(gpu, 1000, 2000), 0.75, 1e-12);
  EXPECT_DOUBLE_EQ(grouped_gemm_shape_scale(gpu, 500, 1000), 0.5);            // 5e5 < 1e6: the first point
  EXPECT_DOUBLE_EQ(grouped_gemm_shape_scale(gpu, 4000, 4000), 1.0);           // 1.6e7 > 4e6: the last
  EXPECT_DOUBLE_EQ(grouped_gemm_shape_scale(gpu, 0, 2000), 1.0);              // shape unknown: no factor
  EXPECT_DOUBLE_EQ(grouped_gemm_shape_scale(test::a100(), 1000, 2000), 1.0);  // no figures
}

TEST(GroupedGemmShape, FusedCallsRateIsTheRowsCurveTimesTheShapeFactor) {
  const GpuSpec gpu = gpu_with_shape_scale();
  const ComputeCost c = gemm_cost(gpu, eight_experts(1000, 2000));
  // 256 rows: 0.4 on the rows curve, x 0.75 = 0.3 of 312 TFLOP/s;
  // 8 x 2 x 256 x 1,000 x 2,000 = 8.192e9 FLOPs / 93.6e12 = 87.52 us
  EXPECT_NEAR(c.efficiency, 0.3, 1e-12);
  EXPECT_NEAR(c.math_s, 8.192e9 / 93.6e12, 1e-12);
  // the weights, 32 MB at 0.85 x 2,039 GB/s = 18.5 us: math-bound, plus one 4 us launch
  EXPECT_FALSE(c.memory_bound());
  EXPECT_NEAR(c.time_s(), 8.192e9 / 93.6e12 + 4e-6, 1e-12);
  // without the shape figures the same call runs at the rows curve alone: 0.75x the math time
  GpuSpec plain_gpu = gpu;
  plain_gpu.grouped_gemm_scale_by_expert_weights.clear();
  const ComputeCost plain = gemm_cost(plain_gpu, eight_experts(1000, 2000));
  EXPECT_NEAR(plain.math_s / c.math_s, 0.75, 1e-12);
}

// A call that is not fused (one GEMM per expert, training's) takes no shape factor: its rate is
// the GPU's GEMM curve at each expert's size (that path's own shape terms: waves and the floor).
TEST(GroupedGemmShape, OneGemmPerExpertIsNotScaled) {
  GpuSpec with = gpu_with_shape_scale();
  GpuSpec without = with;
  without.grouped_gemm_scale_by_expert_weights.clear();
  ComputeOp op = eight_experts(1000, 2000);
  op.fused_groups = false;
  EXPECT_DOUBLE_EQ(gemm_cost(with, op).time_s(), gemm_cost(without, op).time_s());
}

// The 16-bit rows curve (GpuSpec::grouped_gemm_efficiency_by_rows_16bit) prices a bf16 call of
// the GPU's own generation's kernel; an 8-bit call, or an Sm80-generation kernel's, keeps the
// rows curve. By hand at 256 rows: 16-bit 0.6 x 0.75 = 0.45; the rows curve 0.4 x 0.75 = 0.3.
TEST(GroupedGemmShape, SixteenBitCurvePricesOnlyNativeSixteenBitCalls) {
  GpuSpec gpu = gpu_with_shape_scale();
  gpu.grouped_gemm_efficiency_by_rows_16bit = {{64, 0.3}, {256, 0.6}};
  gpu.peak_flops[Dtype::int8] = 624e12;  // the A100's dense INT8 (datasheet)
  EXPECT_NEAR(gemm_cost(gpu, eight_experts(1000, 2000)).efficiency, 0.45, 1e-12);
  ComputeOp int8 = eight_experts(1000, 2000);
  int8.dtype = Dtype::int8;  // 8 bits: the rows curve
  EXPECT_NEAR(gemm_cost(gpu, int8).efficiency, 0.3, 1e-12);
  ComputeOp sm80 = eight_experts(1000, 2000);
  sm80.generation = KernelGeneration::sm80;  // an older generation's kernel: the rows curve
  EXPECT_NEAR(gemm_cost(gpu, sm80).efficiency, 0.3, 1e-12);
}

// A 4-bit call on a GPU with a rows curve measured at the shape factor's first expert
// (GpuSpec::grouped_gemm_efficiency_by_rows_small_expert_4bit): that point's factor becomes the
// measured rate over the rows curve's, so the first expert gets the measured rate itself and
// larger experts interpolate from it as before; other dtypes keep the given factor.
TEST(GroupedGemmShape, SmallExpertRowsCurveReplacesTheFirstFactorFor4BitCalls) {
  GpuSpec gpu = gpu_with_shape_scale();
  gpu.peak_flops[Dtype::nvfp4] = 1e15;
  gpu.grouped_gemm_efficiency_by_rows_small_expert_4bit = {{64, 0.02}, {256, 0.1}};
  ComputeOp op = eight_experts(1000, 1000);  // 1e6 elements: the first point's expert
  op.dtype = Dtype::nvfp4;
  EXPECT_NEAR(gemm_cost(gpu, op).efficiency, 0.1, 1e-12);  // 256 rows: the measured 0.1
  // 2e6, halfway in log to 4e6: factor 0.1 / 0.4 = 0.25 there, 0.25 + 0.5 x (1 - 0.25) = 0.625,
  // on the rows curve's 0.4: 0.25
  op = eight_experts(1000, 2000);
  op.dtype = Dtype::nvfp4;
  EXPECT_NEAR(gemm_cost(gpu, op).efficiency, 0.25, 1e-12);
  // 128 rows, halfway in log from 64 to 256: measured 0.06, rows curve 0.3; at 1e6: 0.06
  op = eight_experts(1000, 1000);
  op.dtype = Dtype::nvfp4;
  op.m = 128;
  EXPECT_NEAR(gemm_cost(gpu, op).efficiency, 0.06, 1e-12);
  // a bf16 call at 2e6 keeps 0.4 x 0.75 = 0.3
  EXPECT_NEAR(gemm_cost(gpu, eight_experts(1000, 2000)).efficiency, 0.3, 1e-12);
}

// The small-expert curve replaces the first point's factor only: the first segment runs from it
// to the second point, beyond the second the shape curve holds as given, and a shape curve of one
// point holds the measured rate at every size. By hand at 256 rows: rows curve 0.4, measured
// 0.06, so the first factor is 0.06 / 0.4 = 0.15.
TEST(GroupedGemmShape, SmallExpertRowsCurveChangesOnlyTheFirstSegment) {
  GpuSpec gpu = gpu_with_shape_scale();
  gpu.peak_flops[Dtype::nvfp4] = 1e15;
  gpu.grouped_gemm_scale_by_expert_weights = {{1e6, 0.25}, {4e6, 0.5}, {1.6e7, 1.0}};
  gpu.grouped_gemm_efficiency_by_rows_small_expert_4bit = {{64, 0.02}, {256, 0.06}};
  auto fp4_rate = [&gpu](std::int64_t n, std::int64_t k) {
    ComputeOp op = eight_experts(n, k);
    op.dtype = Dtype::nvfp4;
    return gemm_cost(gpu, op).efficiency;
  };
  EXPECT_NEAR(fp4_rate(500, 1000), 0.06, 1e-12);  // 5e5, below the first point: the measured 0.06
  // 2e6, halfway in log from 1e6 to 4e6: 0.15 + 0.5 x (0.5 - 0.15) = 0.325, x 0.4 = 0.13
  EXPECT_NEAR(fp4_rate(1000, 2000), 0.13, 1e-12);
  EXPECT_NEAR(fp4_rate(2000, 2000), 0.2, 1e-12);  // 4e6, the second point: 0.5 x 0.4
  // 8e6, halfway in log from 4e6 to 1.6e7: 0.5 + 0.5 x (1.0 - 0.5) = 0.75, x 0.4 = 0.3, as a
  // bf16 call there (no small-expert curve) gets
  EXPECT_NEAR(fp4_rate(2000, 4000), 0.3, 1e-12);
  EXPECT_NEAR(gemm_cost(gpu, eight_experts(2000, 4000)).efficiency, 0.3, 1e-12);
  EXPECT_NEAR(fp4_rate(4000, 8000), 0.4, 1e-12);            // 3.2e7, beyond the last point: 1.0 x 0.4
  gpu.grouped_gemm_scale_by_expert_weights = {{1e6, 0.5}};  // one point: its factor everywhere
  EXPECT_NEAR(fp4_rate(1000, 2000), 0.06, 1e-12);           // the measured rate, not 0.5 x 0.4
  EXPECT_NEAR(gemm_cost(gpu, eight_experts(1000, 2000)).efficiency, 0.2, 1e-12);  // bf16: 0.5 x 0.4
}

// The fp8_block rows curve (GpuSpec::grouped_gemm_efficiency_by_rows_fp8_block) prices an fp8
// call whose weights carry block scales (ComputeOp::block_scaled); a per-tensor fp8 call, a
// block-scaled call of an Sm80-generation kernel and a bf16 call (the flag read only for fp8)
// keep their curves. By hand at 256 rows: block 0.2 x 0.75 = 0.15; the rows curve 0.4 x 0.75 = 0.3.
TEST(GroupedGemmShape, Fp8BlockCurvePricesOnlyBlockScaledFp8Calls) {
  GpuSpec gpu = gpu_with_shape_scale();
  gpu.grouped_gemm_efficiency_by_rows_fp8_block = {{64, 0.1}, {256, 0.2}};
  gpu.peak_flops[Dtype::fp8] = 624e12;  // a made-up fp8 peak for the A100 (it has none)
  ComputeOp block = eight_experts(1000, 2000);
  block.dtype = Dtype::fp8;
  block.block_scaled = true;
  EXPECT_NEAR(gemm_cost(gpu, block).efficiency, 0.15, 1e-12);
  ComputeOp tensor = block;
  tensor.block_scaled = false;  // one scale a tensor: the rows curve
  EXPECT_NEAR(gemm_cost(gpu, tensor).efficiency, 0.3, 1e-12);
  ComputeOp sm80 = block;
  sm80.generation = KernelGeneration::sm80;  // an older generation's kernel: the rows curve
  EXPECT_NEAR(gemm_cost(gpu, sm80).efficiency, 0.3, 1e-12);
  ComputeOp bf16 = eight_experts(1000, 2000);
  bf16.block_scaled = true;  // no 16-bit curve here: the rows curve
  EXPECT_NEAR(gemm_cost(gpu, bf16).efficiency, 0.3, 1e-12);
}

}  // namespace
}  // namespace twinsim
