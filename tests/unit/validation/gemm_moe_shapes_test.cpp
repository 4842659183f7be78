// The H100's and H200's bf16 GEMM curve held out on cuBLAS products at the MoE training
// judges' per-expert shapes and at dense shapes: ai-dynamo/aiconfigurator's TensorRT-LLM Linear
// rows (scenarios/validation/microbench/gemm_bf16_h100_h200_b200_moe_shapes_aiconfigurator.csv; the
// curve was fitted on OpenXLA's rows, so none of these was seen). Issue #53 asked whether
// one cuBLAS GEMM per expert runs slower than the dense curve prices it at these shapes: it
// does not. The curve prices them as fast as measured or slower, so the gpt-oss judge's
// +40% is not the per-expert GEMM rate.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "scenario/load.hpp"
#include "sim/validate/gemm_fit.hpp"

namespace twinsim {
namespace {

const char* const kAicMoeShapesCsv = "gemm_bf16_h100_h200_b200_moe_shapes_aiconfigurator.csv";

std::vector<MeasuredGemm> aic_moe_shape_rows(const char* device) {
  return read_gemm_csv(std::string(TWINSIM_SOURCE_DIR) + "/scenarios/validation/microbench/" + kAicMoeShapesCsv, device,
                       Dtype::bf16);
}

// One expert GEMM of one EP rank, as the training path prices it (sim/training/layer_costs.cpp
// price_gemm: fwd m x n x k, dgrad m x k x n, wgrad k x n x m; m the expert's rows).
struct AicExpertProduct {
  const char* judge;
  std::int64_t m, n, k;
};

// Balanced rows an expert: 4096 tokens a rank x top-k x EP / experts. gpt-oss-120b: 4096 x 4 x 8
// / 128 = 1024; Qwen3-30B-A3B EP 8: 4096 x 8 x 8 / 128 = 2048; Qwen3-235B-A22B (TP 2 with
// sequence parallelism: 2048 tokens, EP 32): 2048 x 8 x 32 / 128 = 4096; DeepSeek-V3 (TP 2, EP
// 64): 2048 x 8 x 64 / 256 = 4096. gpt-oss's 2880 and 5760 are off the table's grid: its
// nearest points 3072, 6144 (and 2816 rows for its wgrad's 2880).
// clang-format off
const AicExpertProduct kAicJudgeProducts[] = {
    {"gpt-oss gate_up fwd", 1024, 6144, 3072}, {"gpt-oss down fwd/dgrad", 1024, 3072, 3072},
    {"gpt-oss gate_up dgrad", 1024, 3072, 6144}, {"gpt-oss gate_up wgrad", 2816, 6144, 1024},
    {"gpt-oss down wgrad", 2816, 3072, 1024},
    {"qwen3-30b gate_up fwd/wgrad", 2048, 1536, 2048}, {"qwen3-30b down fwd", 2048, 2048, 768},
    {"qwen3-30b gate_up dgrad", 2048, 2048, 1536}, {"qwen3-30b down dgrad", 2048, 768, 2048},
    {"qwen3-30b down wgrad", 768, 2048, 2048},
    {"qwen3-235b gate_up fwd/wgrad", 4096, 3072, 4096}, {"qwen3-235b down fwd", 4096, 4096, 1536},
    {"qwen3-235b gate_up dgrad", 4096, 4096, 3072}, {"qwen3-235b down dgrad", 4096, 1536, 4096},
    {"qwen3-235b down wgrad", 1536, 4096, 4096},
    {"deepseek-v3 gate_up fwd", 4096, 4096, 7168}, {"deepseek-v3 down fwd", 4096, 7168, 2048},
    {"deepseek-v3 gate_up dgrad", 4096, 7168, 4096}, {"deepseek-v3 down dgrad", 4096, 2048, 7168},
    {"deepseek-v3 down wgrad", 2048, 7168, 4096},
};
// clang-format on

// Every judge's expert product on the H100: none priced more than 20% fast, the median not
// fast, and gpt-oss's five within 10% on average (when written: -8.1% (gate_up wgrad) to +11.5%
// (down), mean +3.3%; all 20: median +3.2%, worst -13.6% (Qwen3-235B's down fwd)).
TEST(AiconfiguratorGemm, JudgesExpertProductsAreNotPricedFast) {
  const GpuSpec gpu = catalog_gpu("h100-sxm");
  const std::vector<MeasuredGemm> rows = aic_moe_shape_rows("H100");
  std::vector<double> all, gpt_oss;
  for (const AicExpertProduct& p : kAicJudgeProducts) {
    const MeasuredGemm* hit = nullptr;
    for (const MeasuredGemm& g : rows)
      if (g.m == p.m && g.n == p.n && g.k == p.k) hit = &g;
    ASSERT_NE(hit, nullptr) << p.judge;
    const double error = gemm_time_error(gpu, *hit, GemmTiming::kernel);
    std::printf("%-30s %5lld x %5lld x %5lld  measured %5.0f TFLOP/s  curve %+6.1f%%\n", p.judge,
                static_cast<long long>(p.m), static_cast<long long>(p.n), static_cast<long long>(p.k), hit->tflops,
                100 * error);
    EXPECT_GT(error, -0.20) << p.judge;
    all.push_back(error);
    if (std::string(p.judge).rfind("gpt-oss", 0) == 0) gpt_oss.push_back(error);
  }
  ASSERT_EQ(gpt_oss.size(), 5u);
  EXPECT_GT(percentile(all, 0.5), 0.0);
  const ErrorSummary g = summarize(gpt_oss);
  EXPECT_GT(g.mean_signed, -0.05);
  EXPECT_LT(g.mean_signed, 0.10);
}

// Dense products (m, n, k all >= 4096) on each GPU: median time error and bias within bounds a
// little above those when written (39 rows each: H100 2.2% / +1.1%, H200 2.1% / -0.9%, B200
// 7.0% / +1.6%).
struct AicDenseBound {
  const char* gpu;
  const char* device;
  double median, bias;
};

TEST(AiconfiguratorGemm, DenseProductsHeldOut) {
  for (const AicDenseBound& b :
       {AicDenseBound{"h100-sxm", "H100", 0.04, 0.03}, AicDenseBound{"h200-sxm", "H200", 0.04, 0.03},
        AicDenseBound{"b200", "B200", 0.09, 0.04}}) {
    const GpuSpec gpu = catalog_gpu(b.gpu);
    std::vector<double> errors;
    for (const MeasuredGemm& g : aic_moe_shape_rows(b.device))
      if (g.m >= 4096 && g.n >= 4096 && g.k >= 4096) errors.push_back(gemm_time_error(gpu, g, GemmTiming::kernel));
    ASSERT_GE(errors.size(), 30u) << b.gpu;
    const ErrorSummary s = summarize(errors);
    EXPECT_LT(s.median, b.median) << b.gpu;
    EXPECT_LT(std::abs(s.mean_signed), b.bias) << b.gpu;
  }
}

// The B200's curve (OpenXLA's B200 rows) is slow at the Qwen3-30B-A3B expert products of 1,024
// to 4,096 rows (2 x rows x N x K 3e9-5e10 FLOPs): cuBLAS in TensorRT-LLM 1.3.0rc10 runs them
// 1.3-2x faster than it prices (when written: median +46%, least +27%, of 16). A context
// figure for the B200 judges (which are fp8, on their own curve); it fails when the curve is
// refitted there, which is the time to change this bound.
TEST(AiconfiguratorGemm, B200CurveIsSlowAtSmallExpertProducts) {
  const GpuSpec gpu = catalog_gpu("b200");
  std::vector<double> errors;
  for (const MeasuredGemm& g : aic_moe_shape_rows("B200")) {
    const bool qwen3_30b = (g.n == 1536 && g.k == 2048) || (g.n == 2048 && g.k == 768) ||
                           (g.n == 2048 && g.k == 1536) || (g.n == 768 && g.k == 2048);
    if (qwen3_30b && g.m >= 1024 && g.m <= 4096) errors.push_back(gemm_time_error(gpu, g, GemmTiming::kernel));
  }
  ASSERT_GE(errors.size(), 12u);
  EXPECT_GT(percentile(errors, 0.5), 0.25);
}

}  // namespace
}  // namespace twinsim
