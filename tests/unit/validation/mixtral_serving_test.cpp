// Issue 53's serving judge: Mixtral 8x7B with TP 2 on the TensorRT-LLM v0.9.0 performance page
// (docs/source/performance.md, "All data was generated using version 0.9.0", NVIDIA/TensorRT-LLM
// #1455; scenarios/validation/inference/trtllm09-mixtral-8x7b-*.yaml): the 18 held-out rows of
// cases.csv (trtllm09-mixtral-*), nothing fitted to them. The printed table is the report.
//
// The page is not consistent with itself on three rows: its time is shorter than reading the
// GPU's share of the weights once a pass at the datasheet's HBM peak, the experts in 16 bits as
// the 0.9 MoE plugin held them. How the page counts is not the cause: gptSessionBenchmark (the
// page's tool, benchmarks/cpp/gptSessionBenchmark.cpp at #1455) forces every sequence to the
// full output length (samplingConfig.minLength = maxNewTokens, no early EOS) and prints
// batch x output length / latency for the engine, which the table divides by its TP GPUs; the
// A100 table is FP16 by its own title, so FP8 experts are not it either. The page gives no
// Mixtral recipe (its recipes for the other models build engines from a config alone, with
// random weights): the run read fewer expert bytes than every touched expert once, and nothing
// in the source says why. The same holds on the page's L40S (TP 4) batch 32 2048/2048 row by
// hand (23.3 GB a GPU at 864 GB/s: 27 ms a step against 19.4 ms published; no L40S judge here).
// What the page's own recipes would have run, for a model built that way: Parameter.xavier_init
// (tensorrt_llm/parameter.py at #1455) draws (randn * 2 - 1) x range, a mean of -range, and
// scripts/trtllm09_dummy_moe_routing.py runs Mixtral's forward pass on such weights at TP 2:
// each rank's router sends every token of a batch to the same two experts in layer 0, the
// residual then overflows fp16 and the top-k kernel sends every token to expert 0 in every
// later layer. Priced that way (one expert a layer) the Hopper rows do not fit either
// (TTFT-2048 -32%, batch 512-1,024 128/128 +28..+36% fast), so it is recorded, not modelled. A
// second table with real weights and in-flight batching (TensorRT-LLM v0.14, the test below) is
// predicted within 15% where this one is not: the gap is this page's, not Mixtral's.
// Those rows stay judged and listed, outside the headline (`excluded` says why), as issue 53's
// training judge keeps its container-regression rows (moe_published_runs_test.cpp). The test
// checks the classification: the floor is above every excluded row's time and below every
// kept row's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "scenario/load.hpp"
#include "sim/inference/batch_prediction.hpp"
#include "sim/trust/case_errors.hpp"
#include "trust/validation_cases.hpp"

namespace twinsim {
namespace {

constexpr const char* kBelowWeightRead = "published time below one 16-bit weight read a pass at the datasheet HBM peak";

struct MixtralRow {
  const char* name;  // cases.csv
  // today's predicted / published ratio, each band +-10% of it rounded out (a guard, not the goal)
  double low, high;
  const char* excluded = nullptr;
};

const MixtralRow kRows[] = {
    {"trtllm09-mixtral-8x7b-2xh200-fp8-bs1024-128-128", 0.89, 1.09},
    {"trtllm09-mixtral-8x7b-2xh200-fp8-bs256-128-2048", 0.86, 1.07},
    {"trtllm09-mixtral-8x7b-2xh200-fp8-bs64-2048-128", 0.88, 1.08},
    {"trtllm09-mixtral-8x7b-2xh200-fp8-bs64-2048-2048", 0.69, 0.86},
    {"trtllm09-mixtral-8x7b-2xh200-fp8-ttft-128", 1.08, 1.33},
    {"trtllm09-mixtral-8x7b-2xh200-fp8-ttft-2048", 0.90, 1.11},
    {"trtllm09-mixtral-8x7b-2xh100-fp8-bs512-128-128", 0.86, 1.07},
    {"trtllm09-mixtral-8x7b-2xh100-fp8-bs128-128-2048", 0.62, 0.77},
    {"trtllm09-mixtral-8x7b-2xh100-fp8-bs64-2048-128", 0.80, 0.98},
    {"trtllm09-mixtral-8x7b-2xh100-fp8-bs32-2048-2048", 0.44, 0.55, kBelowWeightRead},
    {"trtllm09-mixtral-8x7b-2xh100-fp8-ttft-128", 1.31, 1.61, kBelowWeightRead},
    {"trtllm09-mixtral-8x7b-2xh100-fp8-ttft-2048", 0.89, 1.10},
    {"trtllm09-mixtral-8x7b-2xa100-fp16-bs512-128-128", 0.79, 0.97},
    {"trtllm09-mixtral-8x7b-2xa100-fp16-bs128-128-2048", 0.60, 0.74},
    {"trtllm09-mixtral-8x7b-2xa100-fp16-bs64-2048-128", 0.67, 0.83},
    {"trtllm09-mixtral-8x7b-2xa100-fp16-bs32-2048-2048", 0.38, 0.47, kBelowWeightRead},
    {"trtllm09-mixtral-8x7b-2xa100-fp16-ttft-128", 1.21, 1.49},
    {"trtllm09-mixtral-8x7b-2xa100-fp16-ttft-2048", 0.94, 1.16},
};

struct Judged {
  const MixtralRow* row = nullptr;
  double published = 0, predicted = 0;
  double published_s = 0;     // the row's time: the batch's run, or the first token
  double weight_floor_s = 0;  // the weights' bytes its passes read, at the datasheet HBM peak
};

// The row's time and its floor: a throughput row's decode passes (output_len - 1; the prefill
// taken as free) each read the GPU's weights the batch touches, a TTFT row's one prefill pass.
Judged judge(const MixtralRow& row, const trust::ValidationCase& c, const std::string& root) {
  const Scenario s = load_scenario_file(root + "/scenarios/" + c.scenario, c.overrides);
  const InferencePrediction p = predict_inference(s);
  const double hbm_Bps = s.cluster.gpu.hbm_bandwidth_Bps;
  Judged j{.row = &row, .published = c.measured};
  if (c.metric == trust::Metric::ttft_s) {
    j.predicted = p.ttft_s;
    j.published_s = c.measured;
    j.weight_floor_s = p.prefill.weight_bytes / hbm_Bps;
  } else {
    j.predicted = p.output_tokens_per_s;
    j.published_s = double(s.inference->batch) * double(s.inference->output_len) / c.measured;
    j.weight_floor_s = double(p.decode_passes) * p.decode_weight_bytes_per_step / hbm_Bps;
  }
  return j;
}

std::vector<Judged> judge_all() {
  const std::string root = TWINSIM_SOURCE_DIR;
  const std::vector<trust::ValidationCase> cases =
      trust::read_validation_cases(root + "/scenarios/validation/cases.csv");
  std::vector<Judged> judged;
  for (const MixtralRow& row : kRows) {
    const auto c = std::find_if(cases.begin(), cases.end(), [&](const auto& v) { return v.name == row.name; });
    if (c == cases.end()) ADD_FAILURE() << row.name << " is not in cases.csv";
    if (c != cases.end()) judged.push_back(judge(row, *c, root));
  }
  return judged;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

TEST(MixtralServing, Trtllm09RowsWithinTheirBandsAndTheHeadline) {
  std::vector<double> kept;
  for (const Judged& j : judge_all()) {
    const double ratio = j.predicted / j.published;
    std::printf("  %-50s published %9.4g predicted %9.4g (%+6.1f%%) floor %5.0f%% of its time%s%s\n", j.row->name,
                j.published, j.predicted, 100 * (ratio - 1), 100 * j.weight_floor_s / j.published_s,
                j.row->excluded ? "  EXCLUDED: " : "", j.row->excluded ? j.row->excluded : "");
    EXPECT_GE(ratio, j.row->low) << j.row->name;
    EXPECT_LE(ratio, j.row->high) << j.row->name;
    if (!j.row->excluded) kept.push_back(std::abs(ratio - 1));
  }
  ASSERT_EQ(kept.size(), 15u);
  const double worst = *std::max_element(kept.begin(), kept.end());
  std::printf("  headline over %zu rows: median |error| %.1f%%, max %.1f%%\n", kept.size(), 100 * median(kept),
              100 * worst);
  EXPECT_LE(median(kept), 0.15);  // issue 53: within 15% of the table
}

// The classification the exclusions rest on, from the simulator's own byte counts and the
// catalog's datasheet bandwidths: an excluded row's published time is below its weight floor,
// a kept row's is not.
TEST(MixtralServing, ExcludedRowsAreExactlyThoseBelowTheWeightReadFloor) {
  for (const Judged& j : judge_all()) {
    if (j.row->excluded) EXPECT_LT(j.published_s, j.weight_floor_s) << j.row->name;
    else EXPECT_GE(j.published_s, j.weight_floor_s) << j.row->name;
  }
}

// The second engine table (issue 53: "a published engine table"): TensorRT-LLM v0.14.0's
// performance overview, Mixtral 8x7B at TP 2 on H200 and H100 in FP8 and on H100 and
// A100-SXM4-80GB in FP16, nine ISL/OSL pairs each (scenarios/validation/engines/
// trtllm014-mixtral-8x7b-*.yaml; cases.csv rows trtllm014-mixtral-*, held out). Its engines were
// built from the Hugging Face checkpoint (real routing) and served with in-flight batching;
// the offline benchmark queues the page's $num_requests of one ISL/OSL at once. Read from the
// committed trust table (sim/trust/case_errors.csv: `twinsim serve --rate inf --requests N` of
// each row), which TrustTable's check holds to today's predictions: the ~7 s of serving
// simulation the 36 rows take runs once in the suite, not twice.
TEST(MixtralServing, Trtllm014TableWithinFifteenPercent) {
  std::vector<double> errors;
  for (const trust::CaseError& e : trust::committed_case_errors()) {
    if (e.name.rfind("trtllm014-mixtral-", 0) != 0) continue;
    const double error = e.predicted / e.measured - 1;  // tokens/s: + is predicted too fast
    std::printf("  %-46s published %8.0f predicted %8.0f (%+6.1f%%)\n", e.name.c_str(), e.measured, e.predicted,
                100 * error);
    errors.push_back(std::abs(error));
  }
  ASSERT_EQ(errors.size(), 36u) << "4 GPU columns x 9 ISL/OSL; after adding cases run `twinsim trust-table`";
  const auto within = std::count_if(errors.begin(), errors.end(), [](double x) { return x <= 0.15; });
  const double worst = *std::max_element(errors.begin(), errors.end());
  std::printf("  v0.14 table, %zu rows: median |error| %.1f%%, max %.1f%%, %td within 15%%\n", errors.size(),
              100 * median(errors), 100 * worst, within);
  EXPECT_LE(median(errors), 0.15);  // issue 53: within 15% of a published engine table
  EXPECT_GE(within, 33);            // today's 33 of 36 (a guard against a regression)
  EXPECT_LE(worst, 0.30);           // today's worst: H100 FP8 128/4096, +23.6%
}

}  // namespace
}  // namespace twinsim
