// A GEMM whose weight has a dimension that is not a whole number of 16 bytes of its math
// type loses cuBLAS's fastest kernels. The rule (sim/cost/compute_cost.cpp gemm_misaligned)
// against hand-picked shapes, and the H100's factor (gemm_misaligned_scale) against S.
// Bekman's d_ff sweep (stas00/ml-engineering training/performance/README.md, "SwiGLU-based
// MLP"; scenarios/validation/microbench/gemm_swiglu_mlp_dff_sweep_h100_mlengineering.csv):
// fp16 torch.bmm, batch 4, [4096 x d_ff] x [d_ff x 4096].
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "scenario/load.hpp"
#include "sim/cost/compute_cost.hpp"
#include "sim/validate/gemm_fit.hpp"

namespace twinsim {
namespace {

// Forward and dgrad GEMMs keep the weight in n and k, wgrad in its output m x n; the
// tokens (forward m, wgrad k) are never a leading dimension.
TEST(GemmAlignment, TheWeightsDimensionsNotTheTokensDecide) {
  EXPECT_TRUE(gemm_misaligned(4096, 4096, 10922, GemmPass::fwd, Dtype::fp16));   // 10922 = 8 x 1365 + 2
  EXPECT_FALSE(gemm_misaligned(4096, 4096, 10944, GemmPass::fwd, Dtype::bf16));  // 8 x 1368
  EXPECT_TRUE(gemm_misaligned(1024, 50257, 768, GemmPass::fwd, Dtype::bf16));    // GPT-2's vocabulary
  EXPECT_FALSE(gemm_misaligned(1023, 50304, 768, GemmPass::fwd, Dtype::bf16));   // odd tokens: not a leading dimension
  EXPECT_TRUE(gemm_misaligned(768, 50257, 1024, GemmPass::wgrad, Dtype::bf16));  // the weight is wgrad's output
  EXPECT_FALSE(gemm_misaligned(768, 50304, 1023, GemmPass::wgrad, Dtype::bf16));
  EXPECT_TRUE(gemm_misaligned(4096, 4096, 4104, GemmPass::fwd, Dtype::fp8));     // 8-aligned is not 16 fp8 values
  EXPECT_FALSE(gemm_misaligned(4096, 4096, 4108, GemmPass::fwd, Dtype::tf32));   // 4 tf32 values: 16 bytes
  EXPECT_FALSE(gemm_misaligned(4096, 4096, 10922, GemmPass::fwd, Dtype::fp32));  // CUDA cores
  EXPECT_FALSE(gemm_misaligned(0, 0, 0, GemmPass::fwd, Dtype::bf16));            // shape unknown
}

struct SweepRow {
  std::int64_t d_ff;
  double tflops;
};

std::vector<SweepRow> read_sweep() {
  std::ifstream in(std::string(TWINSIM_SOURCE_DIR) +
                   "/scenarios/validation/microbench/gemm_swiglu_mlp_dff_sweep_h100_mlengineering.csv");
  EXPECT_TRUE(in) << "the d_ff sweep is missing";
  std::vector<SweepRow> rows;
  std::string line;
  std::getline(in, line);  // gpu,d_hidden,d_ff,tflops,mlp_params,note
  while (std::getline(in, line)) {
    std::stringstream cells(line);
    std::string gpu, hidden, d_ff, tflops;
    std::getline(cells, gpu, ','), std::getline(cells, hidden, ','), std::getline(cells, d_ff, ',');
    std::getline(cells, tflops, ',');
    EXPECT_EQ(hidden, "4096") << line;
    rows.push_back({std::stoll(d_ff), std::stod(tflops)});
  }
  return rows;
}

// The simulator's TFLOP/s for one row's GEMM on the catalog H100: only the ratios matter
// (the bench's absolute rate, ~396 TFLOP/s, is half what the H100's curve gives this size).
double predicted_tflops(const GpuSpec& h100, std::int64_t d_ff) {
  MeasuredGemm g;
  g.dtype = Dtype::fp16, g.batch = 4, g.m = 4096, g.n = 4096, g.k = d_ff;
  g.tflops = 1;  // any: the error's reference
  const double measured_s = g.flops() / 1e12;
  return g.flops() / (measured_s * (1 + gemm_time_error(h100, g, GemmTiming::kernel))) / 1e12;
}

// The misaligned d_ff = 10922 (8/3 x 4096) against the mean of its five aligned neighbours:
// 0.689 measured, the figure fitted on it (within 1%); the aligned rows agree within 1% of
// their mean, measured and predicted (nothing else in the model moves between them).
TEST(GemmAlignment, TheH100LosesAThirdOnAMisalignedDff) {
  const GpuSpec h100 = catalog_gpu("h100-sxm");
  const std::vector<SweepRow> rows = read_sweep();
  ASSERT_EQ(rows.size(), 6u);
  double measured_aligned = 0, predicted_aligned = 0;
  int aligned = 0;
  for (const SweepRow& r : rows)
    if (r.d_ff % 8 == 0) measured_aligned += r.tflops, predicted_aligned += predicted_tflops(h100, r.d_ff), ++aligned;
  ASSERT_EQ(aligned, 5);
  measured_aligned /= aligned, predicted_aligned /= aligned;
  for (const SweepRow& r : rows) {
    const double measured = r.tflops / measured_aligned, predicted = predicted_tflops(h100, r.d_ff) / predicted_aligned;
    std::printf("  d_ff %5lld: measured %.3f, predicted %.3f of the aligned mean%s\n", static_cast<long long>(r.d_ff),
                measured, predicted, r.d_ff % 8 ? "  (misaligned: the fit)" : "");
    EXPECT_NEAR(predicted / measured, 1.0, 0.01) << r.d_ff;
  }
  // without the figure (a GPU not measured so) the misaligned row ran at the aligned rate
  GpuSpec unmeasured = h100;
  unmeasured.gemm_misaligned_scale = 1;
  EXPECT_NEAR(predicted_tflops(unmeasured, 10922) / predicted_tflops(unmeasured, 10944), 1.0, 0.01);
}

}  // namespace
}  // namespace twinsim
