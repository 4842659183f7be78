// A serving pass's routed experts (the ops a MoE layer's fused kernel runs: the gate/up grouped
// GEMM, the activation, the down grouped GEMM) as the serving cost model prices them, against
// published timings of the engines' fused MoE kernels by token count
// (scenarios/validation/microbench/fused_moe_published.csv: vLLM's on an H100 in bf16, SGLang's
// on an H200 in fp8). Nothing here is fitted: the catalog's grouped_gemm_efficiency_by_rows
// comes from DeepGEMM's tables (hardware/catalog/gpus/h100-sxm.yaml). Measured 2026-12-06:
// vLLM's kernel within -18%..+17% (median |error| 6%) over 1-1536 tokens, its math-bound end
// (1,024 and 1,536 tokens) +12% and +17% slow; priced as one tall GEMM, as serving did before,
// those two are too fast (OneTallGemmIsTooFast... prints by how much). SGLang's untuned fp8
// kernel on Qwen3-235B's 192-wide TP-8 experts runs 35-47% slower than predicted at 1-32
// tokens: small experts stream their weights below the HBM rate (few tiles a call); not
// modelled, the bound below says how far.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "hardware/gpu_spec.hpp"
#include "serving_scenarios.hpp"
#include "sim/common/csv.hpp"
#include "sim/inference/iteration_cost.hpp"
#include "sim/inference/iteration_ops.hpp"

namespace twinsim {
namespace {

struct KernelRow {
  std::string kernel, gpu, model, dtype;
  int tp = 1;
  std::int64_t tokens = 0;
  double measured_s = 0;
};

std::vector<KernelRow> published_rows() {
  std::ifstream in(std::string(TWINSIM_SOURCE_DIR) + "/scenarios/validation/microbench/fused_moe_published.csv");
  EXPECT_TRUE(in);
  std::string line;
  std::getline(in, line);  // source,kernel,gpu,model,dtype,tp,tokens,us
  std::vector<KernelRow> rows;
  while (std::getline(in, line)) {
    const auto c = split_csv_line(line);
    EXPECT_EQ(c.size(), 8u) << line;
    rows.push_back({c[1], c[2], c[3], c[4], std::stoi(c[5]), std::stoll(c[6]), std::stod(c[7]) * 1e-6});
  }
  return rows;
}

// The routed experts' ops of one decode step of `tokens` sequences, as serving prices them.
double routed_experts_s(const Scenario& s, std::int64_t tokens) {
  double total = 0;
  for (const PassOpTime& op : ServingCostModel(s).op_times(decode_shape(tokens, 128)))
    if (op.name.rfind("moe.experts.", 0) == 0) total += op.time_s;
  return total;
}

Scenario kernel_scenario(const KernelRow& r, std::int64_t tokens) {
  return test::serving_scenario(r.model, "dgx-" + r.gpu, r.tp, r.tp, 1, tokens, 127, 2, r.dtype, r.dtype);
}

TEST(FusedMoeKernel, RoutedExpertsAgainstPublishedEngineKernels) {
  std::vector<double> vllm_errors, vllm_math_errors, sglang_errors;
  for (const KernelRow& r : published_rows()) {
    if (r.gpu == "a100-80gb") continue;  // the A100's own test below (its curve fitted on one)
    if (r.model == "qwen3-30b-a3b") continue;  // small experts: their own test below
    const double predicted = routed_experts_s(kernel_scenario(r, r.tokens), r.tokens);
    const double error = predicted / r.measured_s - 1;  // + : predicted slower
    (r.kernel == "vllm_fused_moe_tuned" ? vllm_errors : sglang_errors).push_back(std::abs(error));
    if (r.kernel == "vllm_fused_moe_tuned" && r.tokens >= 1024) vllm_math_errors.push_back(std::abs(error));
    std::printf("%-26s %-16s %5lld tokens: measured %7.1f us, predicted %7.1f us (%+.0f%%)\n", r.kernel.c_str(),
                r.model.c_str(), static_cast<long long>(r.tokens), r.measured_s * 1e6, predicted * 1e6, 100 * error);
  }
  ASSERT_EQ(vllm_errors.size(), 15u);
  ASSERT_EQ(vllm_math_errors.size(), 2u);
  ASSERT_EQ(sglang_errors.size(), 7u);
  std::sort(vllm_errors.begin(), vllm_errors.end());
  EXPECT_LT(vllm_errors[vllm_errors.size() / 2], 0.10);
  EXPECT_LT(vllm_errors.back(), 0.20);
  EXPECT_LT(*std::max_element(vllm_math_errors.begin(), vllm_math_errors.end()), 0.20);
  // SGLang's untuned fp8 kernel on 192-wide experts: held out, not met; the bound says how far
  EXPECT_LT(*std::max_element(sglang_errors.begin(), sglang_errors.end()), 0.50);
}

// The same math-bound calls priced as one tall GEMM of all the experts' rows (what serving did
// before, and what a GPU without grouped_gemm_efficiency_by_rows still gets): too fast.
TEST(FusedMoeKernel, OneTallGemmIsTooFastWhereTheKernelIsMathBound) {
  for (const KernelRow& r : published_rows()) {
    if (r.kernel != "vllm_fused_moe_tuned" || r.gpu != "h100" || r.tokens < 1024) continue;
    Scenario s = kernel_scenario(r, r.tokens);
    const double grouped = routed_experts_s(s, r.tokens);
    s.cluster.gpu.grouped_gemm_efficiency_by_rows.clear();
    const double tall = routed_experts_s(s, r.tokens);
    std::printf("%5lld tokens: measured %7.1f us, one tall GEMM %7.1f us, fused groups %7.1f us\n",
                static_cast<long long>(r.tokens), r.measured_s * 1e6, tall * 1e6, grouped * 1e6);
    EXPECT_LT(tall / r.measured_s, 0.8) << r.tokens;
    EXPECT_GT(grouped, 1.2 * tall) << r.tokens;
  }
}

// vLLM's tuned fused_moe on one A100-SXM4-80GB in bf16 (vllm-project/vllm PR #40542: E 64, N 1408,
// hidden 2048, top 6, the routed experts of DeepSeekMoE 16B's shape). a100-sxm-80gb.yaml's
// grouped_gemm_efficiency_by_rows is one point FITTED on the 4,096-token row (384 rows an
// expert, math-bound: one tall GEMM's rate priced it 28% fast before); the rest held out:
// 16-256 tokens (the weights' stream) within -6..0%; 1,024 tokens (96 rows an expert) -20%; 1
// and 4 tokens -61% and -17% (six experts of 17 MB: the kernel's latency, not modelled). Judged
// beyond the kernel on TensorRT-LLM v0.14's Mixtral A100 rows (mixtral_serving_test.cpp).
TEST(FusedMoeKernel, A100RoutedExpertsAgainstVllmsKernel) {
  int weight_stream_rows = 0, fitted_rows = 0, held_out_math_rows = 0;
  for (const KernelRow& r : published_rows()) {
    if (r.gpu != "a100-80gb") continue;
    const double predicted = routed_experts_s(kernel_scenario(r, r.tokens), r.tokens);
    const double error = predicted / r.measured_s - 1;  // + : predicted slower
    std::printf("A100 %-16s %5lld tokens: measured %7.1f us, predicted %7.1f us (%+.0f%%)\n", r.model.c_str(),
                static_cast<long long>(r.tokens), r.measured_s * 1e6, predicted * 1e6, 100 * error);
    if (r.tokens >= 16 && r.tokens <= 256) {
      ++weight_stream_rows;
      EXPECT_LT(std::abs(error), 0.10) << r.tokens;
    }
    if (r.tokens == 1024) {
      ++held_out_math_rows;
      EXPECT_LT(std::abs(error), 0.25) << r.tokens;
    }
    if (r.tokens == 4096) {
      ++fitted_rows;
      EXPECT_LT(std::abs(error), 0.01) << r.tokens;  // the curve's point reproduces its row
    }
  }
  EXPECT_EQ(weight_stream_rows, 3);
  EXPECT_EQ(held_out_math_rows, 1);
  EXPECT_EQ(fitted_rows, 1);
}

// TensorRT-LLM's NVFP4 fused MoE kernel (trtllm-gen) on DeepSeek-V3's experts, 32 local, timed on
// one B300 (flashinfer-ai/flashinfer PR #5301; scenarios/validation/microbench/
// fused_moe_trtllm_nvfp4_b300.csv): b300.yaml's grouped_gemm_efficiency_by_rows as fractions of its
// own peak, b200.yaml's the same rates over the B200's. On each GPU the points reproduce the fitted
// rows (32, 128, 512 rows an expert); the held-out rows (64 and 256) are printed and bounded; and
// from 1,024 tokens the call is slower than the GPU streams its weights, so the curve (not the
// weights' stream) prices every row from there.
void check_trtllm_gen_rows(const std::string& node) {
  std::ifstream in(std::string(TWINSIM_SOURCE_DIR) +
                   "/scenarios/validation/microbench/fused_moe_trtllm_nvfp4_b300.csv");
  ASSERT_TRUE(in);
  const GpuSpec gpu = test::serving_scenario("qwen3-30b-a3b", node, 1, 1, 1, 1, 128, 2).cluster.gpu;
  ASSERT_FALSE(gpu.grouped_gemm_efficiency_by_rows.empty());
  std::string line;
  std::getline(in, line);  // source,kernel,gpu,hidden,intermediate,experts,local_experts,top_k,tokens,ms,tflops
  int fitted = 0, held_out = 0;
  while (std::getline(in, line)) {
    const auto c = split_csv_line(line);
    ASSERT_EQ(c.size(), 11u) << line;
    const double hidden = std::stod(c[3]), inter = std::stod(c[4]), local = std::stod(c[6]);
    const double tokens = std::stod(c[8]), measured_s = std::stod(c[9]) * 1e-3;
    const double rows = tokens * std::stod(c[7]) / std::stod(c[5]);  // an expert's, uniform routing
    const double flops = 2 * rows * local * hidden * 3 * inter;      // gate, up and down
    EXPECT_NEAR(flops / measured_s / 1e12, std::stod(c[10]), 0.01 * std::stod(c[10])) << line;
    if (rows < 32) continue;  // below the curve: the weights' stream or the first point
    const double measured = flops / measured_s / gpu.peak(Dtype::nvfp4);
    const double curve = interpolate_efficiency(gpu.grouped_gemm_efficiency_by_rows, rows);
    const double weights_s = local * hidden * 3 * inter * (0.5 + 1.0 / 16) / gpu.hbm_bandwidth_Bps;  // e2m1 + e4m3/16
    EXPECT_GT(measured_s, 2 * weights_s) << line;  // not the weights' stream: the rate sets it
    const double error = measured / curve - 1;     // predicted time against measured
    std::printf(
        "%s trtllm-gen nvfp4 %5.0f tokens, %3.0f rows an expert: measured %.4f of the peak, curve %.4f (%+.0f%%)\n",
        node.c_str(), tokens, rows, measured, curve, 100 * error);
    const bool fit_row = rows == 32 || rows == 128 || rows == 512;
    (fit_row ? fitted : held_out) += 1;
    EXPECT_LT(std::abs(error), fit_row ? 0.01 : 0.25) << line;
  }
  EXPECT_EQ(fitted, 3);
  EXPECT_EQ(held_out, 2);
}

TEST(FusedMoeKernel, BlackwellNvfp4CurveAgainstTrtllmGenRows) {
  check_trtllm_gen_rows("hgx-b300");  // the rows' own GPU
  check_trtllm_gen_rows("dgx-b200");  // the same rates carried to the B200
}

// Small experts (issue 53's MoE serving): Qwen3-30B-A3B's 128 experts of hidden 2,048 and
// intermediate 768, top 8, in vLLM's fused_moe on one H100 in fp8 w8a8 with its default config
// (vllm-project/vllm PR #24700, "Qwen3 MoE FP8", the "Main" rows: `benchmark_moe.py
// --model=Qwen/Qwen3-30B-A3B -tp=1 --dtype=fp8_w8a8`, 1-4,096 tokens), held out. The H100's rows
// curve comes from DeepGEMM's rates on DeepSeek-V3's experts, 5-9x the weight elements of these
// (1536 x 2048 and 2048 x 768); h100-sxm.yaml's grouped_gemm_scale_by_expert_weights (fitted on
// CUTLASS's grouped GEMM at the 1536 x 2048 shape) prices them at 0.328 of that rate. Measured
// 2026-12-07: where the weights' stream sets the time (16-128 tokens) 14-20% fast, unchanged;
// from 1,024 tokens, where the kernel is math-bound, 0.58x to 0.74x the measured time (the rows
// curve alone: 0.51x to 0.27x). vLLM's untuned Triton kernel stays slower than CUTLASS's: the
// bounds record how far, and that the shape factor carries most of the way.
TEST(FusedMoeKernel, SmallExpertsRunAtTheirShapesRateWhereMathBound) {
  int stream_rows = 0, math_rows = 0;
  for (const KernelRow& r : published_rows()) {
    if (r.model != "qwen3-30b-a3b") continue;
    Scenario s = kernel_scenario(r, r.tokens);
    const double predicted = routed_experts_s(s, r.tokens);
    const double ratio = predicted / r.measured_s;
    s.cluster.gpu.grouped_gemm_scale_by_expert_weights.clear();
    const double rows_only = routed_experts_s(s, r.tokens) / r.measured_s;
    std::printf(
        "H100 fp8 qwen3-30b-a3b %5lld tokens: measured %7.1f us, predicted %7.1f us (%+.0f%%; rows curve alone "
        "%+.0f%%)\n",
        static_cast<long long>(r.tokens), r.measured_s * 1e6, predicted * 1e6, 100 * (ratio - 1),
        100 * (rows_only - 1));
    if (r.tokens >= 16 && r.tokens <= 128) {
      ++stream_rows;
      EXPECT_GT(ratio, 0.5) << r.tokens;  // the weights' stream: near the kernel
    }
    if (r.tokens >= 1024) {
      ++math_rows;
      EXPECT_GT(ratio, 0.5) << r.tokens;              // within a factor 2 of the kernel
      EXPECT_LT(ratio, 1.0) << r.tokens;              // vLLM's untuned kernel: still slower
      EXPECT_GT(ratio, 1.1 * rows_only) << r.tokens;  // the shape's factor, not the rows, moved it
    }
  }
  EXPECT_EQ(stream_rows, 7);
  EXPECT_EQ(math_rows, 5);
}

}  // namespace
}  // namespace twinsim
