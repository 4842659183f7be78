// Published Megatron-Core dense pretraining runs on GB200 and GB300 NVL72 racks, in fp8 and
// NVFP4 (Megatron-Bridge's performance summary, NeMo 26.02 container, NVIDIA-NeMo/
// Megatron-Bridge docs/performance-summary.md @ df0289c1; each scenario file names its rows
// and recipe). Each pair runs one plan in both precisions, so the pair's ratio judges the fp4
// GEMMs and casts alone. They are judges, never fitting data: the nvfp4 GEMM curves were
// fitted to cuBLASLt's FP4 squares (scenarios/validation/microbench/
// gemm_cublaslt_gb200_gb300_fp4_azure.csv), nothing to these runs.
//
// What is asserted: every run fits, and each run's throughput stays in the band it reaches
// today (a guard against regressions, recorded with the error below; the goal is
// 15%). The printed table is the report.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "hardware/stack_spec.hpp"
#include "scenario/errors.hpp"
#include "scenario/load.hpp"
#include "sim/cost/compute_cost.hpp"
#include "sim/cost/power_limit.hpp"
#include "sim/inference/serve_run.hpp"
#include "sim/memory/memory_report.hpp"
#include "sim/training/training_report.hpp"
#include "sim/validate/error_stats.hpp"
#include "sim/validate/gemm_fit.hpp"

namespace twinsim {
namespace {

struct PublishedRun {
  const char* scenario;         // under scenarios/validation/training/
  const char* precision;        // training.precision
  double tokens_per_s_per_gpu;  // published
  double low, high;             // the band of predicted / published held today
  const char* extra = nullptr;  // one more --set, where the row's plan differs from the file's
};

// Bands: today's ratio (printed by the test) +-10% of it, rounded out. Errors when written
// (predicted against published): 70B GB300 fp8 -2.0%, nvfp4 +1.3%; 70B GB200 fp8 +1.2%
// (+19.2% with the B200's fp8 curve, before the GB200's own cuBLASLt fp8 curve, gb200.yaml),
// nvfp4 +13.4%; 405B GB300 fp8 -5.0%, nvfp4 +9.8%. The runs with TP (2 and 4) overlap its
// communication with TE's userbuffers, each collective behind the one GEMM it is fused with
// (the megatron-core stack's tp_overlap: matmul); hidden behind the layer's whole pass
// instead (tp_overlap: layer) the nvfp4 runs, whose GEMMs are ~40% shorter, came out +19.5%
// and +18.5% (fp8 +3.0%, -3.3%).
const PublishedRun kRuns[] = {
    {"megatron-bridge-llama3-70b-gb300-26.02.yaml", "fp8", 4596, 0.88, 1.08},
    {"megatron-bridge-llama3-70b-gb300-26.02.yaml", "nvfp4", 6798, 0.91, 1.12},
    {"megatron-bridge-llama3-70b-gb200-26.02.yaml", "fp8", 3887, 0.91, 1.12},
    {"megatron-bridge-llama3-70b-gb200-26.02.yaml", "nvfp4", 5041, 1.02, 1.25},
    {"megatron-bridge-llama31-405b-gb300-26.02.yaml", "fp8", 988, 0.85, 1.05},
    {"megatron-bridge-llama31-405b-gb300-26.02.yaml", "nvfp4", 1347, 0.98, 1.21},
    // Megatron's split counting the embedding and the loss (plan.account_for_*_in_pipeline_split):
    // 16 stages x 8 virtual stages, the embedding's and the loss's without a layer (not writable
    // before: "every virtual stage needs a layer"). When written: FP8-MX +7.5%, NVFP4 +8.5%,
    // FP8-CS (4 virtual stages) +6.1% (+6.0% with the even chunk split it had before)
    {"megatron-bridge-llama31-405b-gb200-26.02.yaml", "fp8", 786, 0.97, 1.18},
    {"megatron-bridge-llama31-405b-gb200-26.02.yaml", "nvfp4", 1145, 0.98, 1.19},
    {"megatron-bridge-llama31-405b-gb200-26.02.yaml", "fp8", 793, 0.95, 1.17, "plan.virtual_stages=4"},
};

Scenario load(const PublishedRun& run) {
  std::vector<std::string> sets = {std::string("training.precision=") + run.precision};
  if (run.extra) sets.emplace_back(run.extra);
  return load_scenario_file(std::string(TWINSIM_SOURCE_DIR) + "/scenarios/validation/training/" + run.scenario, sets);
}

// Every run fits. The GB200 405B FP8-CS recipe (4 virtual stages, 176.1 GiB at stage 1) came
// out 1.7% over the GB200's HBM while the catalog read its "186 GB" as 1e9 bytes (173.2 GiB);
// the driver exposes 189471 MiB (185.0 GiB, gb200.yaml).
TEST(BlackwellRuns, EveryPublishedRunFits) {
  for (const PublishedRun& run : kRuns) {
    const MemoryReport m = predict_memory(load(run));
    std::printf("%-46s %-5s peak %6.1f GiB of %.1f\n", run.scenario, run.precision,
                static_cast<double>(m.peak_bytes) / (1 << 30), static_cast<double>(m.capacity_bytes) / (1 << 30));
    EXPECT_TRUE(m.fits) << run.scenario << " " << run.precision;
  }
}

TEST(BlackwellRuns, ThroughputInItsRecordedBand) {
  std::vector<double> errors;
  for (const PublishedRun& run : kRuns) {
    const TrainingPrediction p = predict_training(load(run));
    const double ratio = p.throughput.tokens_per_s_per_gpu / run.tokens_per_s_per_gpu;
    errors.push_back(std::abs(ratio - 1));
    std::printf("%-46s %-5s predicted %6.0f tokens/s/GPU, published %5.0f (%+.1f%%)\n", run.scenario, run.precision,
                p.throughput.tokens_per_s_per_gpu, run.tokens_per_s_per_gpu, 100 * (ratio - 1));
    EXPECT_GE(ratio, run.low) << run.scenario << " " << run.precision;
    EXPECT_LE(ratio, run.high) << run.scenario << " " << run.precision;
  }
  std::sort(errors.begin(), errors.end());
  std::printf("median |error| %.1f%%, max %.1f%% over %zu runs\n", 100 * errors[errors.size() / 2],
              100 * errors.back(), errors.size());
  EXPECT_LT(errors.back(), 0.15);  // issue #60: every published NVL72 run within 15%
}

// The Blackwell rack GPUs' own GEMM curves (gb200.yaml's fp8, b200.yaml's nvfp4 from the GB200,
// b300.yaml's fp8 and nvfp4 from the GB300) are `twinsim fit-gemm --fit squares` of cuBLASLt's
// squares on each GPU; the irregular shapes are held out. Bounds sit a little above the
// held-out time errors when written: GB200 nvfp4 median 17.4%, fp8 7.3%; GB300 nvfp4 29.4%,
// fp8 9.0%.
struct RackCurve {
  const char* gpu;
  const char* device;
  Dtype dtype;
  GemmTiming timing;
  double held_out_median;
};

TEST(BlackwellGemmCurves, AreTheFitOfTheirSquares) {
  const std::string csv =
      std::string(TWINSIM_SOURCE_DIR) + "/scenarios/validation/microbench/gemm_cublaslt_gb200_gb300_fp4_azure.csv";
  for (const RackCurve& c : {RackCurve{"gb200", "GB200", Dtype::nvfp4, GemmTiming::wall, 0.19},
                             RackCurve{"gb200", "GB200", Dtype::fp8, GemmTiming::wall, 0.09},
                             RackCurve{"gb300", "GB300", Dtype::nvfp4, GemmTiming::wall, 0.31},
                             RackCurve{"gb300", "GB300", Dtype::fp8, GemmTiming::kernel, 0.10}}) {
    GpuSpec gpu = catalog_gpu(c.gpu);
    std::vector<MeasuredGemm> fit_rows;
    std::vector<double> held_out;
    for (const MeasuredGemm& g : read_gemm_csv(csv, c.device, c.dtype)) {
      if (is_fit_row(g, GemmFitRows::squares)) fit_rows.push_back(g);
      else held_out.push_back(gemm_time_error(gpu, g, c.timing));
    }
    ASSERT_EQ(fit_rows.size(), 6u) << c.gpu;
    const std::vector<EfficiencyPoint> refit = fit_gemm_curve(gpu, fit_rows, c.timing);
    const std::vector<EfficiencyPoint>& frozen = catalog_gemm_curve(gpu, c.dtype);
    ASSERT_EQ(refit.size(), frozen.size()) << c.gpu;
    for (std::size_t i = 0; i < refit.size(); ++i) EXPECT_NEAR(frozen[i].efficiency, refit[i].efficiency, 6e-5) << c.gpu << i;
    EXPECT_LT(summarize(held_out).median, c.held_out_median) << c.gpu << " " << to_string(c.dtype);
  }
}

// TensorRT-LLM 1.0's FP4 serving (NVIDIA/TensorRT-LLM docs/source/performance/perf-overview.md
// @ 00f37686, trtllm-bench, Llama 3.3 70B NVFP4 W4A4 with an FP8 KV cache, TP1; the B200 and
// GB200 FP4 columns; scenarios/validation/engines/trtllm1-llama3.3-70b-{b200,gb200}-fp4.yaml,
// the same rows in cases.csv), run as trtllm-bench runs it: N requests of one ISL/OSL at t = 0.
// Judges, never fitted: TensorRT-LLM runs its own CUTLASS NVFP4 GEMMs (stack trtllm-v1,
// gemm_kernel: cutlass): on the B200 its nvfp4 curve (B200 CUTLASS NVFP4 GEMMs), on the GB200
// that curve moved to the GB200's power limit and SMs (gb200.yaml's cutlass curve), where its
// cuBLASLt squares had priced it before (the GB200 then +20.4% at 128/128, predicted/published
// GB200/B200 ratios 1.40-1.45 on the GEMM-heavy points against the published 1.04-1.18), and
// with the GB200's driver-exposed 185.0 GiB instead of 173.2 for its KV cache. When written:
// B200 worst -11.4%, GB200 worst -12.9% (128/2048).
struct Fp4ServingPoint {
  const char* gpu;
  std::int64_t isl, osl, requests;
  double published;  // total output tokens/s
};

const Fp4ServingPoint kFp4Serving[] = {
    {"b200", 128, 128, 30000, 11147},  {"b200", 128, 2048, 3000, 9922},   {"b200", 128, 4096, 1500, 6831},
    {"b200", 500, 2000, 3000, 7762},   {"b200", 1000, 1000, 3000, 7007},  {"b200", 1000, 2000, 1500, 6271},
    {"b200", 2048, 128, 3000, 1339},   {"b200", 2048, 2048, 1500, 4783},  {"b200", 5000, 500, 1500, 1459},
    {"b200", 20000, 2000, 1000, 665},  {"gb200", 128, 128, 30000, 12189}, {"gb200", 128, 2048, 3000, 11309},
    {"gb200", 128, 4096, 1500, 7849},  {"gb200", 500, 2000, 3000, 9028},  {"gb200", 1000, 1000, 3000, 7326},
    {"gb200", 1000, 2000, 1500, 6513}, {"gb200", 2048, 128, 3000, 1450},  {"gb200", 2048, 2048, 1500, 5646},
    {"gb200", 5000, 500, 1500, 1602},  {"gb200", 20000, 2000, 1000, 755},
};

TEST(BlackwellServing, TrtllmFp4OfflineThroughputWithinFifteenPercent) {
  for (const Fp4ServingPoint& p : kFp4Serving) {
    const std::string path =
        std::string(TWINSIM_SOURCE_DIR) + "/scenarios/validation/engines/trtllm1-llama3.3-70b-" + p.gpu + "-fp4.yaml";
    const Scenario s = load_scenario_file(
        path, {"inference.prompt_len=" + std::to_string(p.isl), "inference.output_len=" + std::to_string(p.osl),
               "inference.batch=" + std::to_string(p.requests)});
    const double error = run_offline_benchmark(s).summary.output_tokens_per_s / p.published - 1;
    std::printf("  %-6s %5lld/%-5lld published %6.0f  error %+5.1f%%\n", p.gpu, static_cast<long long>(p.isl),
                static_cast<long long>(p.osl), p.published, 100 * error);
    EXPECT_LT(std::abs(error), 0.15) << p.gpu << " " << p.isl << "/" << p.osl;
  }
}

// The GB200's CUTLASS NVFP4 curve (gb200.yaml gemm_kernel_efficiency_by_dtype.cutlass) is the
// B200's measured one moved by the power-bound rate: derived here by hand. beta from the H100's
// duty-cycle fit (knee 0.64, slope 0.435): ln 0.64 / ln(1 - 0.435 x 0.36) = -0.44629 / -0.17031
// = 2.6204. 1,000 W with 148 SMs -> 1,200 W with 152: clock (1.2 x 148 / 152)^(1 / 2.6204) =
// 1.16842^0.38162 = 1.0612, rate x 152 / 148 = 1.0899; against the peaks 9,000 / 10,000: 0.9809.
TEST(Gb200CutlassFp4, IsTheB200CurveAtTheGb200sPowerLimit) {
  const GpuSpec h100 = catalog_gpu("h100-sxm"), b200 = catalog_gpu("b200"), gb200 = catalog_gpu("gb200");
  ASSERT_TRUE(h100.power_limited_gemm.has_value());
  const double beta = draw_clock_exponent(*h100.power_limited_gemm);
  EXPECT_NEAR(beta, 2.6204, 1e-3);
  EXPECT_EQ(b200.sms, 148);
  EXPECT_EQ(gb200.sms, 152);
  const double rate = power_bound_rate_ratio(beta, 1000, b200.sms, 1200, gb200.sms);
  EXPECT_NEAR(rate, 1.0899, 5e-4);
  EXPECT_NEAR(power_bound_rate_ratio(beta, 1000, 148, 1000, 148), 1.0, 1e-12);  // the same board: unchanged
  const double fraction = rate * b200.peak(Dtype::nvfp4) / gb200.peak(Dtype::nvfp4);
  EXPECT_NEAR(fraction, 0.9809, 5e-4);
  const std::vector<EfficiencyPoint>& measured = b200.gemm_efficiency_by_dtype.at(Dtype::nvfp4);
  const std::vector<EfficiencyPoint>& moved = gb200.gemm_kernel_efficiency_by_dtype.at("cutlass").at(Dtype::nvfp4);
  ASSERT_EQ(moved.size(), measured.size());
  for (std::size_t i = 0; i < moved.size(); ++i) {
    EXPECT_DOUBLE_EQ(moved[i].size, measured[i].size) << i;
    EXPECT_NEAR(moved[i].efficiency, measured[i].efficiency * fraction, 6e-5) << i;
  }
}

// Which curve a GEMM reads: the stack's kernel family's where the GPU lists one for the math
// type, else the GPU's own. An 8192^3 NVFP4 GEMM (1.0995e12 FLOPs, past both curves' last
// points; shape left unknown, so no wave quantization) on a GB200: cuBLASLt's 0.7841 of 10,000
// TFLOP/s -> 140.2 us; CUTLASS's 0.4167 -> 263.9 us. The B200 has no cutlass entry: its own
// nvfp4 curve (CUTLASS's, 0.4248 of 9,000 -> 287.6 us) either way; fp8 on the GB200 has none.
TEST(Gb200CutlassFp4, TheStackPicksTheCurveOfItsKernels) {
  const GpuSpec b200 = catalog_gpu("b200"), gb200 = catalog_gpu("gb200");
  const double flops = 2.0 * 8192.0 * 8192.0 * 8192.0;
  ComputeOp op;
  op.dtype = Dtype::nvfp4;
  op.flops = flops;
  EXPECT_NEAR(gemm_cost(gb200, op).math_s, flops / (10000e12 * 0.7841), 1e-9);
  op.gemm_kernel = kCutlassGemm;
  EXPECT_NEAR(gemm_cost(gb200, op).math_s, flops / (10000e12 * 0.4167), 1e-9);
  EXPECT_NEAR(gemm_cost(gb200, op).math_s, 263.9e-6, 0.1e-6);
  EXPECT_NEAR(gemm_cost(b200, op).math_s, flops / (9000e12 * 0.4248), 1e-9);
  op.dtype = Dtype::fp8;
  EXPECT_EQ(&gemm_curve(gb200, GemmPass::fwd, Dtype::fp8, kCutlassGemm),
            &gb200.gemm_efficiency_by_dtype.at(Dtype::fp8));
  EXPECT_EQ(catalog_stack("trtllm-v1").gemm_kernel, kCutlassGemm);
  EXPECT_EQ(catalog_stack("megatron-core").gemm_kernel, kCublasGemm);
  EXPECT_THROW(load_scenario_file(std::string(TWINSIM_SOURCE_DIR) +
                                      "/scenarios/validation/engines/trtllm1-llama3.3-70b-gb200-fp4.yaml",
                                  {"stack.gemm_kernel=cudnn"}),
               ScenarioError);
}

}  // namespace
}  // namespace twinsim
