// The catalog's GEMM curves against the measured GEMMs they came from
// (scenarios/validation/microbench/): each curve is what `twinsim fit-gemm` makes of its
// fit rows, and on the rows it did not see it predicts kernel times far better than the
// figure it replaced (hardware/catalog/README.md, "Fitting a GPU's GEMM curve").
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <string>

#include "scenario/errors.hpp"
#include "scenario/load.hpp"
#include "sim/validate/gemm_fit.hpp"

namespace twinsim {
namespace {

struct CurveCase {
  const char* gpu;
  const char* file;    // in scenarios/validation/microbench/
  const char* device;  // rows whose device names contain this
  Dtype dtype;
  GemmTiming timing;
  GemmFitRows fit;
  double held_out_median, held_out_p90;  // bounds on the catalog curve's held-out time error
  std::vector<EfficiencyPoint> before;   // the figure the catalog used before, for every math type
  const char* more_file = nullptr;       // a second source the curve pools, and its device filter
  const char* more_device = nullptr;
};

std::string path_of(const char* file) {
  return std::string(TWINSIM_SOURCE_DIR) + "/scenarios/validation/microbench/" + file;
}

const char* const kXlaH100 = "gemm_h100_sm90_bf16_f32_xla_perftable.csv";
const char* const kXlaB200 = "gemm_b200_sm100_bf16_f32_fp8_xla_perftable.csv";
const char* const kAzureA100 = "gemm_cublaslt_a100_fp16_azure.csv";
const char* const kAzureHopper = "gemm_cublaslt_h100_h200_fp8_azure.csv";
const char* const kAoB200 = "gemm_b200_bf16_squares_pytorch_ao.csv";  // past XLA's range (b200.yaml)
const char* const kFp4B200 = "gemm_b200_fp4_published.csv";
const char* const kFp8B200 = "gemm_b200_fp8_cutlass_vllm.csv";  // past XLA's range (b200.yaml)

// The case's measured rows: its file's, pooled with its second source's where it has one.
std::vector<MeasuredGemm> rows_of(const CurveCase& c) {
  if (c.more_file == nullptr) return read_gemm_csv(path_of(c.file), c.device, c.dtype);
  return read_gemm_csvs({path_of(c.file), path_of(c.more_file)}, {c.device, c.more_device}, c.dtype);
}

// Bounds sit a little above the held-out errors when the curves were written (README table):
// they fail if the catalog's curve or the cost model drifts from the data.
// clang-format off
const CurveCase kCases[] = {
    {"a100-sxm-80gb", kAzureA100, "A100", Dtype::fp16, GemmTiming::wall, GemmFitRows::squares, 0.11, 0.14, {{1, 0.859}}},
    {"h100-sxm", kXlaH100, "sm_90", Dtype::bf16, GemmTiming::kernel, GemmFitRows::even, 0.09, 0.30, {{1, 0.801}}},
    {"h100-sxm", kXlaH100, "sm_90", Dtype::tf32, GemmTiming::kernel, GemmFitRows::even, 0.15, 0.33, {{1, 0.801}}},
    {"h100-sxm", kAzureHopper, "H100", Dtype::fp8, GemmTiming::wall, GemmFitRows::squares, 0.25, 0.31, {{1, 0.801}}},
    // p90 0.342 under the Hopper tile choices (gemm_tile_edges): 802816 x 192 x 768 too fast
    {"h200-sxm", kAzureHopper, "H200", Dtype::fp8, GemmTiming::wall, GemmFitRows::squares, 0.26, 0.36, {{1, 0.830}}},
    {"b200", kXlaB200, "B200", Dtype::bf16, GemmTiming::kernel, GemmFitRows::even, 0.11, 0.31, {{1, 1.0}}, kAoB200, "B200 (pytorch/ao"},
    {"b200", kXlaB200, "B200", Dtype::tf32, GemmTiming::kernel, GemmFitRows::even, 0.10, 0.30, {{1, 1.0}}},
    {"b200", kXlaB200, "B200", Dtype::fp8, GemmTiming::kernel, GemmFitRows::even, 0.13, 0.36, {{1, 1.0}}, kFp8B200, "B200 (vLLM"},
    // the B200's FP4 curves from B200 measurements (the GB200 keeps its cuBLASLt squares)
    {"b200", kFp4B200, "B200", Dtype::nvfp4, GemmTiming::kernel, GemmFitRows::even, 0.05, 0.18, {{1, 1.0}}},
    {"b200", kFp4B200, "B200", Dtype::mxfp4, GemmTiming::kernel, GemmFitRows::even, 0.07, 0.48, {{1, 1.0}}},
};
// clang-format on

class CatalogGemmCurve : public ::testing::TestWithParam<CurveCase> {};

TEST_P(CatalogGemmCurve, IsTheFitOfItsRows) {
  const CurveCase& c = GetParam();
  GpuSpec gpu = catalog_gpu(c.gpu);
  const std::vector<MeasuredGemm> rows = rows_of(c);
  ASSERT_GE(rows.size(), 7u);  // the B200's published NVFP4 GEMMs: 7 compute-bound shapes
  std::vector<MeasuredGemm> fit_rows;
  for (const MeasuredGemm& g : rows)
    if (is_fit_row(g, c.fit)) fit_rows.push_back(g);
  const std::vector<EfficiencyPoint> refit = fit_gemm_curve(gpu, fit_rows, c.timing);
  const std::vector<EfficiencyPoint> frozen = catalog_gemm_curve(gpu, c.dtype);
  ASSERT_FALSE(frozen.empty());
  ASSERT_EQ(refit.size(), frozen.size());
  for (std::size_t i = 0; i < refit.size(); ++i) {
    // the catalog writes 4 or 5 significant digits of size and 4 decimals of efficiency
    EXPECT_NEAR(frozen[i].size / refit[i].size, 1.0, 5e-4) << i;
    EXPECT_NEAR(frozen[i].efficiency, refit[i].efficiency, 6e-5) << i;
  }
}

TEST_P(CatalogGemmCurve, PredictsHeldOutShapesBetterThanTheFigureItReplaced) {
  const CurveCase& c = GetParam();
  const GpuSpec gpu = catalog_gpu(c.gpu);
  GpuSpec before = gpu;
  before.gemm_efficiency_by_dtype.clear();
  before.gemm_efficiency = c.before;
  std::vector<double> after_errors, before_errors;
  for (const MeasuredGemm& g : rows_of(c)) {
    if (is_fit_row(g, c.fit)) continue;
    after_errors.push_back(gemm_time_error(gpu, g, c.timing));
    before_errors.push_back(gemm_time_error(before, g, c.timing));
  }
  ASSERT_GE(after_errors.size(), 3u);
  const ErrorSummary after = summarize(after_errors), was = summarize(before_errors);
  EXPECT_LT(after.median, c.held_out_median);
  EXPECT_LT(after.p90, c.held_out_p90);
  // the old figures were all too fast on average; the fitted curve is not biased so
  EXPECT_LT(was.mean_signed, -0.07);
  EXPECT_LT(std::abs(after.mean_signed), std::abs(was.mean_signed));
}

INSTANTIATE_TEST_SUITE_P(Catalog, CatalogGemmCurve, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<CurveCase>& info) {
                           std::string name = std::string(info.param.gpu) + "_" +
                                              std::string(to_string(info.param.dtype));
                           for (char& ch : name)
                             if (ch == '-') ch = '_';
                           return name;
                         });

// One shape by hand: 4096^3 bf16 on the H100 is 1024 tiles of 128x128 over 132 SMs, 8 waves
// of 1056 slots (utilisation 1024 / 1056 = 0.9697), at the curve's 1.3744e11-FLOP point
// (0.8037): 1.3744e11 / (989e12 x 0.8037 x 0.9697) = 178.3 us.
TEST(FitGemm, KernelTimeOfOneShapeByHand) {
  const GpuSpec gpu = catalog_gpu("h100-sxm");
  MeasuredGemm g;
  g.dtype = Dtype::bf16;
  g.m = g.n = g.k = 4096;
  g.tflops = g.flops() / 178.3e-6 / 1e12;  // a measurement equal to the hand figure
  EXPECT_NEAR(gemm_time_error(gpu, g, GemmTiming::kernel), 0.0, 1e-3);
  // wall timing adds one 4 us launch
  EXPECT_NEAR(gemm_time_error(gpu, g, GemmTiming::wall), 4.0 / 178.3, 1e-3);
}

// Two rows in one octave: the point is the median of their efficiencies over the wave
// utilisation, placed at their median FLOPs.
TEST(FitGemm, RowsOfOneOctaveShareTheirMedian) {
  GpuSpec gpu = catalog_gpu("h100-sxm");
  gpu.sms = 0;  // no wave quantisation: the point is the measured fraction itself
  MeasuredGemm a, b;
  a.dtype = b.dtype = Dtype::bf16;
  a.m = a.n = a.k = 1024;
  b.m = 2048, b.n = 1024, b.k = 512;  // the same FLOPs
  a.tflops = 0.5 * 989, b.tflops = 0.7 * 989;
  const auto curve = fit_gemm_curve(gpu, {a, b}, GemmTiming::kernel);
  ASSERT_EQ(curve.size(), 1u);
  EXPECT_NEAR(curve[0].size, 2.0 * 1024 * 1024 * 1024, 1);
  EXPECT_NEAR(curve[0].efficiency, 0.6, 1e-12);
}

// Several files pool: each keeps its own device filter and row numbers, and the report
// judges each file's held-out rows apart.
TEST(FitGemm, SeveralFilesPoolAndAreJudgedApart) {
  const std::string a = testing::TempDir() + "/gemm_a.csv", b = testing::TempDir() + "/gemm_b.csv";
  std::ofstream(a) << "gpu,dtype,m,n,k,tflops\nX,bf16,1024,1024,1024,400\nX,bf16,2048,2048,2048,600\nY,bf16,4096,4096,4096,1\n";
  std::ofstream(b) << "gpu,dtype,m,n,k,tflops\nY,bf16,4096,4096,4096,700\nY,bf16,8192,8192,8192,720\n";
  const std::vector<MeasuredGemm> rows = read_gemm_csvs({a, b}, {"X", "Y"}, Dtype::bf16);
  ASSERT_EQ(rows.size(), 4u);  // file a's Y row is filtered out
  EXPECT_EQ(rows[1].source, 0);
  EXPECT_EQ(rows[1].index, 1);
  EXPECT_EQ(rows[2].source, 1);
  EXPECT_EQ(rows[2].index, 0);  // numbered within its own file
  const GemmFitReport r = fit_and_judge(catalog_gpu("h100-sxm"), rows, GemmTiming::kernel, GemmFitRows::even);
  ASSERT_EQ(r.held_out_by_source.size(), 2u);
  EXPECT_EQ(r.held_out_by_source[0].count, 1u);  // each file's odd row
  EXPECT_EQ(r.held_out_by_source[1].count, 1u);
  EXPECT_EQ(r.held_out.count, 2u);
  EXPECT_THROW(read_gemm_csvs({a, b}, {"X", "Y", "Z"}, Dtype::bf16), std::runtime_error);
}

TEST(FitGemm, MalformedRowsNameTheLine) {
  const std::string path = testing::TempDir() + "/bad_gemm.csv";
  std::ofstream(path) << "gpu,dtype,m,n,k,tflops\nX,bf16,1024,1024,1024,abc\n";
  try {
    read_gemm_csv(path, "", Dtype::bf16);
    FAIL() << "accepted a rate that is not a number";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("bad_gemm.csv:2 tflops"), std::string::npos) << e.what();
  }
  std::ofstream(path) << "gpu,m,n,k\nX,1,1,1\n";
  EXPECT_THROW(read_gemm_csv(path, "", Dtype::bf16), std::runtime_error);
  // an edge past 2^31 once became an integer by undefined behaviour (tests/fuzz/fuzz_csv.cpp)
  std::ofstream(path) << "gpu,dtype,m,n,k,tflops\nX,bf16,1024,2.5e115,1024,300\n";
  try {
    read_gemm_csv(path, "", Dtype::bf16);
    FAIL() << "accepted an edge of 2.5e115";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("bad_gemm.csv:2 n: '2.5e115' is not a whole number from 1 to 2147483648 (2^31)"),
              std::string::npos)
        << e.what();
  }
}

// An fp8 run needs the GPU's own fp8 curve: the 16-bit one at twice the peak was 17% fast.
TEST(FitGemm, Fp8RunWithoutAnFp8CurveIsRefused) {
  const std::string base =
      "model: llama2-7b\ntraining: {seq_len: 2048, global_batch: 8, micro_batch: 1, precision: fp8}\n"
      "plan: {tp: 1, pp: 1, dp: 8}\ncluster: ";
  EXPECT_NO_THROW(load_scenario_text(base + "dgx-h100\n"));
  try {
    load_scenario_text(base + "{preset: dgx-h100, gpu: {memory_GiB: 80, hbm_bandwidth_GBps: 3350, "
                              "peak_tflops: {fp32: 67, bf16: 989, fp8: 1979}, gemm_efficiency: [[1, 0.8]]}}\n");
    ADD_FAILURE() << "an fp8 run without an fp8 curve was accepted";
  } catch (const ScenarioError& e) {
    EXPECT_NE(std::string(e.what()).find("gemm_efficiency_by_dtype.fp8"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace twinsim
