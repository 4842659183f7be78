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
// modelled, the bound below says how far. Since the H100's 16-bit rows curve (vLLM 0.14's bf16
// module at this shape, fused_moe_tables_test.cpp) the PR's math-bound rows (512-1,536 tokens)
// are priced 18-21% fast: the PR's kernel took 1.21x vLLM 0.14's time there (1,024 tokens 833.7
// against 686.5 us, 1,536 tokens 1122.9 against 926.6; fused_moe_aiconfigurator_serving_shapes.csv).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "hardware/gpu_spec.hpp"
#include "scenario/load.hpp"
#include "serving_scenarios.hpp"
#include "sim/common/csv.hpp"
#include "sim/cost/compute_cost.hpp"
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
  EXPECT_LT(vllm_errors.back(), 0.25);
  EXPECT_LT(*std::max_element(vllm_math_errors.begin(), vllm_math_errors.end()), 0.25);
  // SGLang's untuned fp8 kernel on 192-wide experts: held out, not met; the bound says how far
  EXPECT_LT(*std::max_element(sglang_errors.begin(), sglang_errors.end()), 0.50);
}

// The same math-bound calls priced as one tall GEMM of all the experts' rows (what serving did
// before, and what a GPU without grouped_gemm_efficiency_by_rows still gets): too fast, and
// farther from the kernel than the fused groups' price.
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
    EXPECT_LT(std::abs(grouped / r.measured_s - 1), std::abs(tall / r.measured_s - 1)) << r.tokens;
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

// Whether the shape factor can be one per GPU, whatever the kernel's math type (issue 53/56):
// the same expert shape (Qwen3-30B-A3B's up projection, N 1536 x K 2048) measured in fp8 by
// vLLM's Triton fused_moe (PR #24700 "Main", default config, 1,024-4,096 tokens) and in bf16 by
// CUTLASS's SM90 cooperative grouped GEMM (tgale96/grouped_gemm PR #37: 160.5 TFLOP/s, 512 rows
// an expert). By hand: a token's routed work is 2 x 8 experts x 2048 x (1536 + 768) = 75,497,472
// FLOPs, so 4,096 tokens in 1,647.57 us run at 187.7 TFLOP/s and 1,024 in 536.33 us at 144.1:
// 0.90x..1.17x CUTLASS's bf16 rate, not the 2x the fp8 peak (1,979 against 989) would give. Over
// the fp8 peak and the rows curve (256 rows an expert and fewer: its first point, 0.4414) that
// is a factor of 0.165..0.215 -- half to two thirds of the 0.328 fitted on CUTLASS's bf16 row.
// So at small experts the factor depends on the kernel's math type (or on the kernel: the two
// are confounded here); the published figures hold no bf16 Triton row at this shape from 64
// rows an expert to decide which, so the catalog keeps one factor per GPU (issue 53's report).
TEST(FusedMoeKernel, SmallExpertsInFp8RunAtBf16sAbsoluteRateNotTwice) {
  const double cutlass_bf16_tflops = 160.5;  // PR #37, cutlass_sm90_cooperative, uniform
  const double flops_per_token = 2.0 * 8 * 2048 * (1536 + 768);
  int rows = 0;
  for (const KernelRow& r : published_rows()) {
    if (r.model != "qwen3-30b-a3b" || r.tokens < 1024) continue;
    const GpuSpec gpu = kernel_scenario(r, r.tokens).cluster.gpu;
    const double tflops = flops_per_token * static_cast<double>(r.tokens) / r.measured_s / 1e12;
    const double per_expert_rows = static_cast<double>(r.tokens) * 8 / 128;
    const double implied = tflops * 1e12 / gpu.peak(Dtype::fp8) /
                           interpolate_efficiency(gpu.grouped_gemm_efficiency_by_rows, per_expert_rows);
    const double catalog = grouped_gemm_shape_scale(gpu, 1536, 2048);
    std::printf("fp8 Triton %5lld tokens: %6.1f TFLOP/s (%.2fx CUTLASS bf16), implied factor %.3f, catalog %.3f\n",
                static_cast<long long>(r.tokens), tflops, tflops / cutlass_bf16_tflops, implied, catalog);
    ++rows;
    EXPECT_GT(tflops / cutlass_bf16_tflops, 0.85) << r.tokens;  // about bf16's absolute rate
    EXPECT_LT(tflops / cutlass_bf16_tflops, 1.25) << r.tokens;  // far from twice it
    EXPECT_LT(implied, 0.7 * catalog) << r.tokens;              // one factor cannot hold both
  }
  EXPECT_EQ(rows, 5);
}

// One MoE layer's forward at Qwen3-30B-A3B's experts, measured by ai-dynamo/aiconfigurator's
// collectors (scenarios/validation/microbench/fused_moe_aiconfigurator_qwen3_30b.csv, its README
// entry says what each module times): rows of one framework, version, GPU and dtype, by tokens.
struct ModuleRow {
  std::int64_t tokens = 0;
  double measured_s = 0;
};

std::vector<ModuleRow> module_rows(const std::string& version, const std::string& gpu, const std::string& dtype) {
  std::ifstream in(std::string(TWINSIM_SOURCE_DIR) +
                   "/scenarios/validation/microbench/fused_moe_aiconfigurator_qwen3_30b.csv");
  EXPECT_TRUE(in);
  std::string line;
  std::getline(in, line);  // source,framework,version,kernel,gpu,dtype,tokens,ms
  std::vector<ModuleRow> rows;
  while (std::getline(in, line)) {
    const auto c = split_csv_line(line);
    EXPECT_EQ(c.size(), 8u) << line;
    if (c[2] == version && c[4] == gpu && c[5] == dtype) rows.push_back({std::stoll(c[6]), std::stod(c[7]) * 1e-3});
  }
  return rows;
}

// The judged engine scenario (scenarios/validation/engines/<name>.yaml: its GPU, stack and dtypes).
Scenario engine_scenario(const std::string& name) {
  return load_scenario_file(std::string(TWINSIM_SOURCE_DIR) + "/scenarios/validation/engines/" + name + ".yaml");
}

// What serving prices for one MoE layer of a `tokens`-row pass: every moe.* op (router, permute,
// both grouped GEMMs, activation, unpermute), or only the two grouped GEMMs.
double moe_layer_s(const Scenario& s, std::int64_t tokens, bool gemms_only = false) {
  double total = 0;
  for (const PassOpTime& op : ServingCostModel(s).op_times(decode_shape(tokens, 128))) {
    const bool gemm = op.name == "moe.experts.gate_up.fwd" || op.name == "moe.experts.down.fwd";
    if (op.name.rfind("moe.", 0) == 0 && (gemm || !gemms_only)) total += op.time_s;
  }
  return total;
}

// The same fused MoE on a GB200 and a B200 (TensorRT-LLM 1.3.0rc10's CUTLASS NVFP4 module, one
// version on both): from 64 tokens the GB200 takes 0.97-1.00x the B200's time, not the 0.90x its
// 10,000 against 9,000 NVFP4 TFLOP/s would give. gb200.yaml carries the B200's grouped rates at the
// same absolute TFLOP/s (b200.yaml's points x 9,000/10,000), so the priced grouped GEMMs keep the
// measured ratio within 5%; inherited as fractions of the peak they priced 0.90x (this fails).
TEST(FusedMoeKernel, Gb200FusedMoeRunsAtTheB200sRate) {
  const std::vector<ModuleRow> b200 = module_rows("1.3.0rc10", "b200", "nvfp4");
  const std::vector<ModuleRow> gb200 = module_rows("1.3.0rc10", "gb200", "nvfp4");
  ASSERT_EQ(b200.size(), gb200.size());
  const Scenario b = engine_scenario("trtllm1-qwen3-30b-a3b-b200-fp4");
  const Scenario g = engine_scenario("trtllm1-qwen3-30b-a3b-gb200-fp4");
  int compared = 0;
  for (std::size_t i = 0; i < b200.size(); ++i) {
    ASSERT_EQ(b200[i].tokens, gb200[i].tokens);
    if (b200[i].tokens < 64) continue;  // below: launch latency, noise of a few us
    const double measured = gb200[i].measured_s / b200[i].measured_s;
    const double priced = moe_layer_s(g, b200[i].tokens, true) / moe_layer_s(b, b200[i].tokens, true);
    std::printf("GB200/B200 fused MoE %5lld tokens: measured %.3f, priced grouped GEMMs %.3f\n",
                static_cast<long long>(b200[i].tokens), measured, priced);
    EXPECT_GT(measured, 0.95) << b200[i].tokens;  // the same kernel's time on both
    EXPECT_LT(measured, 1.02) << b200[i].tokens;
    EXPECT_NEAR(priced, measured, 0.05) << b200[i].tokens;
    ++compared;
  }
  EXPECT_EQ(compared, 20);
}

// TensorRT-LLM's CUTLASS NVFP4 fused MoE module at Qwen3-30B-A3B's small experts on one B200
// (TensorRT-LLM 1.2.0rc5, the tables' nearest to the judged 1.0), held out against what serving
// prices for the layer (b200.yaml: the trtllm-gen rows curve x Hopper's 0.328 small-expert factor).
// Measured: the module holds ~115-150 us from 16 to 512 tokens (tile and latency bound: the FP4
// weights and scales, 128 x 4.72M x 0.5625 B = 340 MB, stream in 42 us at 8 TB/s), then grows
// ~0.11 us a token. Priced: below the kernel's floor at 16-64 tokens (0.5-0.75x), 1.6-2.6x its
// time at 256-2,048 tokens (the decode batches of the judged runs; worst at 512 tokens, 32 rows an
// expert, the rows curve's first point x 0.328 = 1.1% of the NVFP4 peak, where the module runs
// 233 TFLOP/s = 2.6%), within 11% from 8,192. Not
// repriced (issue 53, s13 report 06): the B200 judges sit within 15% on this price, so the slower
// rows at 256-4,096 tokens offset something else; the bounds hold the finding.
TEST(FusedMoeKernel, SmallExpertModulesOnB200AgainstTrtllmCutlass) {
  const Scenario b = engine_scenario("trtllm1-qwen3-30b-a3b-b200-fp4");
  int floor_rows = 0, decode_rows = 0, prefill_rows = 0;
  for (const ModuleRow& r : module_rows("1.2.0rc5", "b200", "nvfp4")) {
    const double ratio = moe_layer_s(b, r.tokens) / r.measured_s;
    std::printf("B200 nvfp4 CUTLASS MoE %5lld tokens: measured %7.1f us, priced %7.1f us (%+.0f%%)\n",
                static_cast<long long>(r.tokens), r.measured_s * 1e6, r.measured_s * ratio * 1e6, 100 * (ratio - 1));
    if (r.tokens >= 16 && r.tokens <= 64) {
      ++floor_rows;
      EXPECT_LT(ratio, 0.85) << r.tokens;  // the module's floor is not priced
    } else if (r.tokens >= 256 && r.tokens <= 2048) {
      ++decode_rows;
      EXPECT_GT(ratio, 1.5) << r.tokens;  // priced slower than the kernel runs
      EXPECT_LT(ratio, 2.8) << r.tokens;
    } else if (r.tokens >= 8192) {
      ++prefill_rows;
      EXPECT_LT(std::abs(ratio - 1), 0.20) << r.tokens;  // math-bound: the rate holds
    }
  }
  EXPECT_EQ(floor_rows, 4);
  EXPECT_EQ(decode_rows, 8);
  EXPECT_EQ(prefill_rows, 3);
}

// The same module priced with a rows curve measured at this expert
// (GpuSpec::grouped_gemm_efficiency_by_rows_small_expert_4bit): the flat rate at which serving's
// whole moe.* layer (router, permute, both grouped GEMMs, activation, unpermute) takes 1.2.0rc5's
// measured time, solved at 16, 128, 512, 2,048 and 8,192 tokens (2, 8, 32, 128, 512 rows an
// expert as serving counts them); the other 22 rows and 1.3.0rc10's 27 are held out here. Not in
// b200.yaml (s14 report 04): it moves the 10 B200 and 8 of the 10 GB200 Qwen3-30B-A3B judges the
// wrong way (B200 1000/2000 +4.7 -> -22.6%), because the old price's 1.6-2.6x at decode batches
// offsets time missing elsewhere in the pass; the GPU file gets these points once that is priced.
std::vector<EfficiencyPoint> b200_small_expert_nvfp4() {
  return {{2, 0.00193}, {8, 0.01162}, {32, 0.03689}, {128, 0.07729}, {512, 0.09405}};
}

TEST(FusedMoeKernel, MeasuredSmallExpertCurveOnB200HeldOut) {
  Scenario b = engine_scenario("trtllm1-qwen3-30b-a3b-b200-fp4");
  b.cluster.gpu.grouped_gemm_efficiency_by_rows_small_expert_4bit = b200_small_expert_nvfp4();
  const std::vector<std::int64_t> fitted = {16, 128, 512, 2048, 8192};
  for (const std::string version : {"1.2.0rc5", "1.3.0rc10"}) {
    std::vector<double> held_out;  // |priced / measured - 1| from 4 tokens up
    for (const ModuleRow& r : module_rows(version, "b200", "nvfp4")) {
      const double ratio = moe_layer_s(b, r.tokens) / r.measured_s;
      const bool fit = version == "1.2.0rc5" && std::ranges::count(fitted, r.tokens) > 0;
      std::printf("B200 nvfp4 MoE, measured curve, %s %5lld tokens: measured %7.1f us, priced %7.1f us (%+.0f%%)%s\n",
                  version.c_str(), static_cast<long long>(r.tokens), r.measured_s * 1e6, r.measured_s * ratio * 1e6,
                  100 * (ratio - 1), fit ? " fitted" : "");
      if (fit) {
        EXPECT_NEAR(ratio, 1, 0.02) << r.tokens;  // the fit reproduces its own points
      } else if (r.tokens >= 4) {
        held_out.push_back(std::abs(ratio - 1));
        EXPECT_GT(ratio, 0.8) << version << " " << r.tokens;  // the kernel's floor is priced
        // 1.3.0rc10 runs 4-15% faster than 1.2.0rc5 from 128 tokens: priced slow by about that
        EXPECT_LT(ratio, version == "1.2.0rc5" ? 1.2 : 1.3) << version << " " << r.tokens;
      }
    }
    std::ranges::sort(held_out);
    const double median = held_out[held_out.size() / 2];
    std::printf("%s held out: %zu rows, median |error| %.1f%%, max %.1f%%\n", version.c_str(), held_out.size(),
                100 * median, 100 * held_out.back());
    EXPECT_LT(median, version == "1.2.0rc5" ? 0.08 : 0.15) << version;
  }
}

// The GB200's points are the B200's at the same absolute TFLOP/s (x 9,000/10,000, as gb200.yaml
// carries the rows curve), so the GB200's priced layer is the B200's, as measured within 3%.
TEST(FusedMoeKernel, MeasuredSmallExpertCurveOnGb200AtTheB200sRate) {
  Scenario b = engine_scenario("trtllm1-qwen3-30b-a3b-b200-fp4");
  Scenario g = engine_scenario("trtllm1-qwen3-30b-a3b-gb200-fp4");
  b.cluster.gpu.grouped_gemm_efficiency_by_rows_small_expert_4bit = b200_small_expert_nvfp4();
  for (EfficiencyPoint p : b200_small_expert_nvfp4())
    g.cluster.gpu.grouped_gemm_efficiency_by_rows_small_expert_4bit.push_back({p.size, p.efficiency * 0.9});
  for (std::int64_t tokens : {128, 512, 2048, 8192}) {
    const double ratio = moe_layer_s(g, tokens, true) / moe_layer_s(b, tokens, true);
    EXPECT_NEAR(ratio, 1.0, 0.03) << tokens;  // measured 0.97-1.00 (Gb200FusedMoeRunsAtTheB200sRate)
  }
}

// vLLM's Triton fused_moe in bf16 at Qwen3-30B-A3B's experts on one H100 (vLLM 0.14.0's FusedMoE
// layer; the judged run is vLLM 0.10, whose default config for this shape predates PR #24700's
// better defaults, so its kernel may run slower than these rows), held out against what serving
// prices under the judged scenario. From 2,048 tokens (the 8,192-token prefill passes of the c10
// run) serving priced the layer 1.4-1.7x the measured time on the 8-bit rows curve (48 layers x
// (4.63 - 2.94 ms) = 81 ms more a full chunk, the size of the c10 TTFT p50 miss, +46%: s13 report
// 06). On h100-sxm.yaml's 16-bit rows curve (fitted on the same kernel at Mixtral's experts, not
// on these rows) 1.04-1.19x, and the c10 TTFT p50 +10.9% (s13 report 12).
TEST(FusedMoeKernel, SmallExpertModulesOnH100AgainstVllmTriton) {
  const Scenario v = engine_scenario("vllm010-qwen3-30b-a3b-h100-bf16");
  int latency_rows = 0, prefill_rows = 0;
  for (const ModuleRow& r : module_rows("0.14.0", "h100", "bfloat16")) {
    const double ratio = moe_layer_s(v, r.tokens) / r.measured_s;
    std::printf("H100 bf16 vLLM fused_moe %5lld tokens: measured %7.1f us, priced %7.1f us (%+.0f%%)\n",
                static_cast<long long>(r.tokens), r.measured_s * 1e6, r.measured_s * ratio * 1e6, 100 * (ratio - 1));
    if (r.tokens <= 8) {
      ++latency_rows;
      EXPECT_LT(std::abs(ratio - 1), 0.25) << r.tokens;  // a few experts' weights: priced near
    } else if (r.tokens >= 2048) {
      ++prefill_rows;
      EXPECT_GT(ratio, 0.9) << r.tokens;  // the prefill passes' MoE: near the kernel
      EXPECT_LT(ratio, 1.25) << r.tokens;
    }
  }
  EXPECT_EQ(latency_rows, 4);
  EXPECT_EQ(prefill_rows, 7);
}

}  // namespace
}  // namespace twinsim
