// A MoE layer's grouped expert GEMM as the catalog prices it (sim/cost/compute_cost: each of the
// call's `groups` experts' GEMMs at its own size's point on the H100's bf16 curve, as Transformer
// Engine's GroupedLinear issues one cuBLAS GEMM per expert on Hopper, each at least the GPU's
// grouped_gemm_expert_floor_us) against a published grouped GEMM of Qwen3-30B-A3B's up
// projection on an H100 (tgale96/grouped_gemm PR #37; 128 experts, 512 rows each when uniform,
// N 1536, K 2048, bf16; scenarios/validation/microbench/grouped_gemm_moe_h100_published.csv).
// The floor was fitted on the uniform row of the one-cuBLAS-GEMM-per-expert backend; the other
// 14 rows are held out. Measured 2026-12-06: the catalog prints 129.5 TFLOP/s; held out, the same
// backend's skewed routings (118, 112) within 16%, every backend and routing within 35%
// (CUTLASS's SM90 grouped kernel 160.5, cuBLAS's batched 85.2). Without the floor the curve
// prices each expert's kernel at XLA's standalone rate, 301 TFLOP/s: 57-72% too fast.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "scenario/load.hpp"
#include "sim/common/csv.hpp"
#include "sim/cost/compute_cost.hpp"

namespace twinsim {
namespace {

ComputeOp grouped_call(std::int64_t experts, std::int64_t rows, std::int64_t n, std::int64_t k) {
  ComputeOp op = gemm_op(Dtype::bf16, rows, n, k);
  op.flops *= static_cast<double>(experts);
  op.bytes *= static_cast<double>(experts);
  op.groups = experts;
  return op;
}

TEST(GroupedGemm, ExpertsPricedOneGemmEachAgainstPublishedH100GroupedGemm) {
  const GpuSpec gpu = catalog_node("dgx-h100").gpu;
  std::ifstream in(std::string(TWINSIM_SOURCE_DIR) + "/scenarios/validation/microbench/grouped_gemm_moe_h100_published.csv");
  ASSERT_TRUE(in);
  std::string line;
  std::getline(in, line);  // source,kernel,dtype,experts,rows_per_expert,n,k,distribution,tflops
  std::vector<double> loop_errors, all_errors;
  double fitted_error = 1;
  while (std::getline(in, line)) {
    const auto c = split_csv_line(line);
    ASSERT_EQ(c.size(), 9u) << line;
    const ComputeOp op = grouped_call(std::stoll(c[3]), std::stoll(c[4]), std::stoll(c[5]), std::stoll(c[6]));
    const double predicted_tflops = op.flops / op_cost(gpu, op).time_s() / 1e12;
    const double error = std::stod(c[8]) / predicted_tflops - 1;  // predicted time over measured
    const bool fitted = c[1] == "cublas_loop" && c[7] == "uniform";
    if (fitted) fitted_error = std::abs(error);
    else all_errors.push_back(std::abs(error));
    if (!fitted && c[1] == "cublas_loop") loop_errors.push_back(std::abs(error));
    std::printf("%-26s %-13s measured %6s TFLOP/s, catalog %5.1f (time error %+.0f%%)%s\n", c[1].c_str(), c[7].c_str(),
                c[8].c_str(), predicted_tflops, 100 * error, fitted ? " fitted" : "");
  }
  ASSERT_EQ(all_errors.size(), 14u);
  ASSERT_EQ(loop_errors.size(), 2u);
  EXPECT_LT(fitted_error, 0.01);
  EXPECT_LT(*std::max_element(loop_errors.begin(), loop_errors.end()), 0.16);
  EXPECT_LT(*std::max_element(all_errors.begin(), all_errors.end()), 0.35);
  // without the floor each expert's kernel runs at the curve's standalone rate: far too fast
  GpuSpec no_floor = gpu;
  no_floor.grouped_gemm_expert_floor_s = 0;
  const ComputeOp call = grouped_call(128, 512, 1536, 2048);
  EXPECT_GT(call.flops / op_cost(no_floor, call).time_s() / 1e12, 1.5 * 160.5);
}

// The same published calls priced as one fused grouped kernel (ComputeOp::fused_groups, as a
// serving engine's MoE GEMM runs): the rows curve (DeepGEMM's rates on DeepSeek-V3's experts)
// times grouped_gemm_scale_by_expert_weights at this expert's 1536 x 2048 = 3.1M elements. The
// H100's factor there was FITTED on CUTLASS's SM90 cooperative kernel, uniform routing: 160.5
// TFLOP/s = 0.1623 of 989 over the curve's 0.4942 at 512 rows = 0.328; held out, its two
// skewed routings (151.5, 154.3: routing skew is not modelled) and the ping-pong schedule
// (134.0). Without the factor the rows curve alone prices the call ~3x too fast. The factor
// multiplies the 8-bit rows curve it was fitted on here; a bf16 call of a serving engine now
// takes the 16-bit one (h100-sxm.yaml, fitted on vLLM 0.14's bf16 fused MoE), which prices this
// library kernel 25-50% fast: the engines' bf16 modules outrun tgale96's standalone CUTLASS
// grouped GEMM at this shape (s13 report 12; fused_moe_tables_test.cpp).
TEST(GroupedGemm, FusedKernelAtQwen3sExpertShapeAgainstCutlassGroupedGemm) {
  GpuSpec gpu = catalog_node("dgx-h100").gpu;
  const GpuSpec serving = gpu;
  gpu.grouped_gemm_efficiency_by_rows_16bit.clear();  // the curve the factor was fitted on
  std::ifstream in(std::string(TWINSIM_SOURCE_DIR) +
                   "/scenarios/validation/microbench/grouped_gemm_moe_h100_published.csv");
  ASSERT_TRUE(in);
  std::string line;
  std::getline(in, line);
  int fitted = 0, held_out = 0;
  while (std::getline(in, line)) {
    const auto c = split_csv_line(line);
    if (c[1] != "cutlass_sm90_cooperative" && c[1] != "cutlass_sm90_pingpong") continue;
    ComputeOp op = grouped_call(std::stoll(c[3]), std::stoll(c[4]), std::stoll(c[5]), std::stoll(c[6]));
    op.fused_groups = true;
    const double predicted_tflops = op.flops / op_cost(gpu, op).time_s() / 1e12;
    const double error = std::stod(c[8]) / predicted_tflops - 1;  // predicted time over measured
    const bool fit = c[1] == "cutlass_sm90_cooperative" && c[7] == "uniform";
    std::printf("fused %-26s %-13s measured %6s TFLOP/s, catalog %5.1f (time error %+.0f%%)%s\n", c[1].c_str(),
                c[7].c_str(), c[8].c_str(), predicted_tflops, 100 * error, fit ? " fitted" : "");
    (fit ? fitted : held_out) += 1;
    EXPECT_LT(std::abs(error), fit ? 0.01 : (c[1] == "cutlass_sm90_pingpong" ? 0.25 : 0.10)) << line;
  }
  EXPECT_EQ(fitted, 1);
  EXPECT_EQ(held_out, 5);
  GpuSpec rows_only = gpu;  // the rows curve alone: DeepSeek-V3's experts' rate
  rows_only.grouped_gemm_scale_by_expert_weights.clear();
  ComputeOp call = grouped_call(128, 512, 1536, 2048);
  call.fused_groups = true;
  EXPECT_GT(call.flops / op_cost(rows_only, call).time_s() / 1e12, 2.5 * 160.5);
  const double serving_tflops = call.flops / op_cost(serving, call).time_s() / 1e12;
  std::printf("the uniform call on the 16-bit rows curve: %.1f TFLOP/s (measured 160.5)\n", serving_tflops);
  EXPECT_GT(serving_tflops, 1.25 * 160.5);
  EXPECT_LT(serving_tflops, 1.6 * 160.5);
}

// The catalog's sm80_gemm_scale (an Ampere-generation kernel on a Hopper GPU, for a stack whose
// MoE GEMM is CUTLASS's Sm80 one) was fitted on the uniform routing's pair of CUTLASS grouped
// GEMMs, SM80 against SM90 cooperative, on the same H100 and shapes; the two skewed routings'
// pairs are held out (109.2 / 151.5 = 0.721, 113.2 / 154.3 = 0.734).
TEST(GroupedGemm, Sm80ScaleAgainstTheHeldOutSkewedPairs) {
  const double scale = catalog_node("dgx-h100").gpu.sm80_gemm_scale;
  std::ifstream in(std::string(TWINSIM_SOURCE_DIR) +
                   "/scenarios/validation/microbench/grouped_gemm_moe_h100_published.csv");
  ASSERT_TRUE(in);
  std::string line;
  std::getline(in, line);
  std::map<std::string, double> sm80, sm90;  // TFLOP/s by routing
  while (std::getline(in, line)) {
    const auto c = split_csv_line(line);
    if (c[1] == "cutlass_sm80_grouped") sm80[c[7]] = std::stod(c[8]);
    if (c[1] == "cutlass_sm90_cooperative") sm90[c[7]] = std::stod(c[8]);
  }
  ASSERT_EQ(sm80.size(), 3u);
  ASSERT_EQ(sm90.size(), 3u);
  EXPECT_NEAR(sm80["uniform"] / sm90["uniform"], scale, 0.001);  // fitted
  for (const char* routing : {"mild_skew", "extreme_skew"})      // held out
    EXPECT_NEAR(sm80[routing] / sm90[routing] / scale - 1, 0, 0.02) << routing;
  EXPECT_DOUBLE_EQ(catalog_node("dgx-h200").gpu.sm80_gemm_scale, scale);     // the same SMs
  EXPECT_DOUBLE_EQ(catalog_node("dgx-a100-80gb").gpu.sm80_gemm_scale, 1.0);  // its own generation
}

// Held out: PyTorch's CUTLASS grouped GEMM at Llama-4 Scout's larger experts on an H100 (pytorch/ao
// PR #2490: 16 experts, 512 rows each on average (jagged), N x K 8192 x 5120 both ways; scenarios/
// validation/microbench/grouped_mm_torch_h100_published.csv). Both of the catalog's prices of such
// a call are judged: one GEMM per expert on the dense curve (training's TE GroupedLinear path,
// without the fused figures) and one fused kernel (the rows curve, 0.4942 at 512 rows, times
// the shape factor, held at 1.0 beyond 29.4M elements: 487.4 TFLOP/s). Measured 2026-12-07: the
// one-GEMM-an-expert price is 726 / 681 TFLOP/s, its time 28% / 20% short of the published
// 524.6 / 545.4; the fused price is 8% / 12% long. Nothing is fitted here: the test pins that
// the training path is too fast at these rows and the fused rate is not (issue 53's gpt-oss gap).
// The fused price here is the 8-bit rows curve's: the H100's 16-bit one (a serving engine's bf16
// module, vLLM 0.14's) is not PyTorch's kernel and would price these calls ~28% fast (s13 report 12).
TEST(GroupedGemm, LargerExpertsAgainstTorchGroupedMm) {
  GpuSpec gpu = catalog_node("dgx-h100").gpu;
  gpu.grouped_gemm_efficiency_by_rows_16bit.clear();  // the fused figure these rows were judged on
  GpuSpec loop_only = gpu;  // one GEMM per expert on the dense curve, no fused figures
  loop_only.grouped_gemm_efficiency_by_rows.clear();
  std::ifstream in(std::string(TWINSIM_SOURCE_DIR) +
                   "/scenarios/validation/microbench/grouped_mm_torch_h100_published.csv");
  ASSERT_TRUE(in);
  std::string line;
  std::getline(in, line);  // source,kernel,dtype,experts,rows_per_expert,n,k,distribution,tflops
  int rows = 0;
  while (std::getline(in, line)) {
    const auto c = split_csv_line(line);
    ASSERT_EQ(c.size(), 9u) << line;
    ComputeOp op = grouped_call(std::stoll(c[3]), std::stoll(c[4]), std::stoll(c[5]), std::stoll(c[6]));
    const double per_expert = op.flops / op_cost(loop_only, op).time_s() / 1e12;
    op.fused_groups = true;
    const double fused = op.flops / op_cost(gpu, op).time_s() / 1e12;
    const double measured = std::stod(c[8]);
    const double loop_error = measured / per_expert - 1, fused_error = measured / fused - 1;  // time
    std::printf("N %5s K %5s measured %6.1f TFLOP/s; one GEMM an expert %5.1f (time %+.0f%%), fused %5.1f (%+.0f%%)\n",
                c[5].c_str(), c[6].c_str(), measured, per_expert, 100 * loop_error, fused, 100 * fused_error);
    EXPECT_LT(loop_error, -0.15) << line;            // the training path's time: more than 15% short
    EXPECT_LT(std::abs(fused_error), 0.15) << line;  // the fused rate: within 15%
    ++rows;
  }
  EXPECT_EQ(rows, 2);
  // gpt-oss-120B's gate_up as its EP 8 training runs it: 16 experts x 1024 rows, N 5760, K 2880,
  // bf16. Fused, by hand: the rows curve at 1024 is 0.5452; the factor at 5760 x 2880 = 16.59M
  // elements, log-linear between (14.68M, 0.912) and (29.36M, 1.0): t = ln(16.59/14.68) / ln 2 =
  // 0.1764, 0.912 x (1/0.912)^0.1764 = 0.9269; so 0.5452 x 0.9269 = 0.5054 of 989.4 TFLOP/s =
  // 500.0 TFLOP/s of math (plus one launch). The dense curve, one GEMM an expert, prints ~671.
  ComputeOp gate_up = grouped_call(16, 1024, 5760, 2880);
  const double loop_rate = gate_up.flops / op_cost(loop_only, gate_up).time_s() / 1e12;
  gate_up.fused_groups = true;
  const ComputeCost fused = op_cost(gpu, gate_up);
  std::printf("gpt-oss gate_up: one GEMM an expert %.1f TFLOP/s, fused %.1f\n", loop_rate,
              gate_up.flops / fused.time_s() / 1e12);
  EXPECT_NEAR(gate_up.flops / fused.math_s / 1e12 / (0.5452 * 0.9269 * gpu.peak(Dtype::bf16) / 1e12), 1, 0.005);
  EXPECT_GT(loop_rate, 1.25 * gate_up.flops / fused.time_s() / 1e12);
}

// Held out: Transformer Engine's own grouped GEMM as GroupedLinear runs Megatron-core's experts on
// Hopper (one cuBLASLt GEMM per expert on several streams), bf16 on an H100, at Qwen3-30B-A3B's
// expert shape N 768 x K 2048, 8 x 4096 and 16 x 2048 rows (NVIDIA/TransformerEngine PR #2045's
// tables, TE 2.2 and TE 2.7; scenarios/validation/microbench/grouped_linear_te_h100_published.csv).
// The catalog's training price of both calls is set by grouped_gemm_expert_floor_us (fitted on
// the single-stream cuBLAS loop of the grouped_gemm package), by hand: 2 x 32768 x 768 x 2048 =
// 103.08 GFLOP over (g x 24.9 us + one 4 us launch): 8 x 4096: 203.2 us, 507.3 TFLOP/s;
// 16 x 2048: 402.4 us, 256.2 TFLOP/s. Measured 2026-12-07, time error (priced over published):
// 8 x 4096 +0% (TE 2.2) / +24% (TE 2.7); 16 x 2048 +56% / +116%: at 2048-row experts TE's
// multi-stream path runs well under the floor, so Qwen3-30B's experts are priced too slow, not
// too fast. The fused grouped price (rows curve x shape factor, what report 04's experiment A
// would bound training's calls by) is 2.2-3.2x too slow at all four rows: no evidence for
// slowing small experts' GEMMs (issue 53's small-expert judges are too fast elsewhere).
// (The fused price: the 8-bit rows curve's, as above.)
TEST(GroupedGemm, TeMultiStreamAtQwen3ExpertsAgainstTePr2045) {
  GpuSpec gpu = catalog_node("dgx-h100").gpu;
  gpu.grouped_gemm_efficiency_by_rows_16bit.clear();
  std::ifstream in(std::string(TWINSIM_SOURCE_DIR) +
                   "/scenarios/validation/microbench/grouped_linear_te_h100_published.csv");
  ASSERT_TRUE(in);
  std::string line;
  std::getline(in, line);  // source,te_version,dtype,experts,rows_per_expert,n,k,tflops
  int rows = 0;
  while (std::getline(in, line)) {
    const auto c = split_csv_line(line);
    ASSERT_EQ(c.size(), 8u) << line;
    const std::int64_t experts = std::stoll(c[3]);
    ComputeOp op = grouped_call(experts, std::stoll(c[4]), std::stoll(c[5]), std::stoll(c[6]));
    const double training = op.flops / op_cost(gpu, op).time_s() / 1e12;
    op.fused_groups = true;
    const double fused = op.flops / op_cost(gpu, op).time_s() / 1e12;
    const double measured = std::stod(c[7]);
    const double training_error = measured / training - 1, fused_error = measured / fused - 1;  // time
    std::printf(
        "TE %s %2lld x %5s rows: measured %6.1f TFLOP/s; training's price %5.1f (time %+.0f%%), fused %5.1f "
        "(%+.0f%%)\n",
        c[1].c_str(), static_cast<long long>(experts), c[4].c_str(), measured, training, 100 * training_error, fused,
        100 * fused_error);
    const double floor_set = 103.08e9 / (static_cast<double>(experts) * 24.9e-6 + 4e-6) / 1e12;  // by hand, above
    EXPECT_NEAR(training / floor_set, 1, 0.005) << line;
    if (experts == 16) EXPECT_GT(training_error, 0.3) << line;  // the floor: too slow at 2048 rows
    else EXPECT_TRUE(training_error > -0.05 && training_error < 0.3) << line;
    EXPECT_GT(fused_error, 1.0) << line;  // the fused rate: more than twice the time
    ++rows;
  }
  EXPECT_EQ(rows, 4);
}

}  // namespace
}  // namespace twinsim
