// Published Megatron-Core mixture-of-experts training runs on H100s and B200s (Megatron-Bridge's
// performance summary, NVIDIA-NeMo/Megatron-Bridge docs/performance-summary.md and
// docs/performance-summary-archive.md; each scenario file under scenarios/validation/training/
// names its row and recipe). They are judges, never fitting data: nothing in the catalog was
// tuned to them.
//
// What is asserted: every run that ran fits in its GPU's memory, and each run's throughput
// stays in the band it reaches today (a guard against regressions, recorded with the error
// below), which is NOT yet issue 53's goal of 10% median and 20% max: the small-expert runs
// (gpt-oss-120B +40%, Qwen3-30B-A3B with PP 2 +20% against its 26.02.01 row, since the op list
// prices the dispatcher's token moves, gpt-oss's clamp and its experts' weighted bias) are
// predicted too fast (gpt-oss's windowed head-64 GQA attention is priced within 4% of cuDNN's own
// published kernel times, windowed_attention_test.cpp: its gap lies elsewhere).
// The 25.11 and 26.02 rows of Qwen3-30B-A3B with PP 2 (5,275 and 5,113) are
// a container regression: the 26.02.01 patch re-measured the same plan at 9,058 while every other
// H100 row moved by 1.3% or less (the scenario files give the figures). The 26.02 row of
// Qwen3-30B-A3B on 8 B200s at one sequence a micro-batch (+105%; within 1% at four) is the same
// regression as NVIDIA tracked it (Megatron-Bridge #1998, kDroplessRegression). They stay judged
// and listed, outside the headline median and max (`excluded` says why). The printed table is the
// report.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "scenario/load.hpp"
#include "sim/memory/memory_report.hpp"
#include "sim/training/training_report.hpp"

namespace twinsim {
namespace {

struct PublishedMoeRun {
  const char* scenario;            // under scenarios/validation/training/
  double tokens_per_s_per_gpu;     // published
  double low, high;                // the band of predicted / published held today
  bool fits = true;                // predicted to fit today (every one ran)
  const char* row = "";            // the release of a further published row of the file's plan
  const char* excluded = nullptr;  // why the run stays out of the headline median and max
};

constexpr const char* kRegression = "container regression: the 26.02.01 patch ran the plan at 9,058";
// Megatron-Bridge #1998 (opened 2026-01-20, "[Regression] Low QWEN3 30B B200 and H100 performance
// with dropless"): "2X slower ... with the dropless schedule compared to the token-drop schedule ...
// the perf in 25.11 is 2X slower than 25.09". The B200 rows of this plan (8 GPUs, MBS 1, EP 8):
// 25.09 token-drop 18,066, 25.11 dropless 9,299, 26.02 dropless 9,691; the B200 recipe was then
// replaced (Megatron-Bridge 0ec1df7, "Fix Qwen3 30B A3B B200 perf config": MBS 4, HybridEP),
// whose 26.02.01 row is judged below.
constexpr const char* kDroplessRegression = "dropless regression of 25.11-26.02 (Megatron-Bridge #1998)";

// Bands: today's ratio (printed by the test) +-10% of it, rounded out.
const PublishedMoeRun kRuns[] = {
    {"megatron-bridge-gpt-oss-120b-h100-25.11.yaml", 5630, 1.0, 2.2},
    {"megatron-bridge-gpt-oss-120b-h100-26.02.yaml", 5993, 1.0, 2.2},
    {.scenario = "megatron-bridge-gpt-oss-120b-h100-26.02.yaml",
     .tokens_per_s_per_gpu = 5984,
     .low = 1.0,
     .high = 2.2,
     .row = "26.02.01"},
    // fits since the megatron-core stack applies the router's probabilities in the experts'
    // activation (stack.moe_probs_in_activation, Megatron-core >= 0.13): 84.0 -> 72.3 GiB
    {.scenario = "megatron-bridge-qwen3-30b-a3b-h100-25.11.yaml",
     .tokens_per_s_per_gpu = 5275,
     .low = 1.0,
     .high = 3.6,
     .excluded = kRegression},
    // the 26.02 row of this plan; the 26.02.01 row of the same plan printed 9,058 (below)
    {.scenario = "megatron-bridge-qwen3-30b-a3b-h100-26.02.yaml",
     .tokens_per_s_per_gpu = 5113,
     .low = 1.0,
     .high = 3.6,
     .excluded = kRegression},
    {"megatron-bridge-qwen3-30b-a3b-h100-26.02.01.yaml", 9058, 1.1, 1.5},
    {"megatron-bridge-qwen3-30b-a3b-ep16-h100-26.04.yaml", 8901, 0.85, 1.15},
    // 8 B200s: at one sequence a micro-batch a layer takes ~8.8 ms where the simulator finds
    // ~4.3 (+105% with the recipe's CUDA graphs of the router and the preprocess, which take
    // their host time off the pass before the dispatcher's sync; +83% priced eager, +97% at
    // 110 us a row before the census); at four (the same model, GPUs and era) within 1%.
    // The 26.02 row sits in #1998's regression (kDroplessRegression): the 25.09 token-drop row
    // of the same plan, 18,066, is 10% below today's prediction.
    {.scenario = "megatron-bridge-qwen3-30b-a3b-b200-26.02.yaml",
     .tokens_per_s_per_gpu = 9691,
     .low = 1.85,
     .high = 2.25,
     .excluded = kDroplessRegression},
    {"megatron-bridge-qwen3-30b-a3b-b200-26.02.01.yaml", 26695, 0.85, 1.15},
    // with the recipe's EP all-to-all overlap (plan.moe_a2a_overlap): +5.5 / +3.7 / +5.1%; left
    // off, the exposed cross-node all-to-alls made them -5.7 / -7.8 / -6.6%, below this band
    {"megatron-bridge-qwen3-235b-a22b-h100-25.11.yaml", 1575, 1.0, 1.15},
    {"megatron-bridge-qwen3-235b-a22b-h100-26.02.yaml", 1633, 1.0, 1.15},
    {.scenario = "megatron-bridge-qwen3-235b-a22b-h100-26.02.yaml",
     .tokens_per_s_per_gpu = 1611,
     .low = 1.0,
     .high = 1.15,
     .row = "26.02.01"},
    {"megatron-bridge-deepseek-v3-h100-25.09.yaml", 1297, 0.4, 1.6},
};

Scenario load(const PublishedMoeRun& run) {
  return load_scenario_file(std::string(TWINSIM_SOURCE_DIR) + "/scenarios/validation/training/" + run.scenario);
}

// "No published MoE run that ran is predicted not to fit" (issue 53): all thirteen today.
TEST(MegatronCoreMoeRuns, EveryPublishedRunFits) {
  for (const PublishedMoeRun& run : kRuns) {
    const MemoryReport m = predict_memory(load(run));
    std::printf("%-50s peak %6.1f GiB of %.1f\n", run.scenario, static_cast<double>(m.peak_bytes) / (1 << 30),
                static_cast<double>(m.capacity_bytes) / (1 << 30));
    EXPECT_EQ(m.fits, run.fits) << run.scenario << ": " << static_cast<double>(m.peak_bytes) / (1 << 30) << " GiB";
  }
}

// The median and the largest |predicted / published - 1|, printed.
void print_errors(const char* label, std::vector<double> errors) {
  std::sort(errors.begin(), errors.end());
  std::printf("%s: median |error| %.1f%%, max %.1f%% over %zu runs\n", label, 100 * errors[errors.size() / 2],
              100 * errors.back(), errors.size());
}

TEST(MegatronCoreMoeRuns, ThroughputInItsRecordedBand) {
  std::vector<double> all, headline;
  for (const PublishedMoeRun& run : kRuns) {
    const TrainingPrediction p = predict_training(load(run));
    const double ratio = p.throughput.tokens_per_s_per_gpu / run.tokens_per_s_per_gpu;
    all.push_back(std::abs(ratio - 1));
    if (run.excluded == nullptr) headline.push_back(std::abs(ratio - 1));
    std::printf("%-50s %-8s predicted %7.0f tokens/s/GPU, published %5.0f (%+.1f%%); EP %.2f s of %.2f s%s%s\n",
                run.scenario, run.row, p.throughput.tokens_per_s_per_gpu, run.tokens_per_s_per_gpu, 100 * (ratio - 1),
                p.breakdown.ep_comm_s, p.step_s, run.excluded ? "; excluded: " : "", run.excluded ? run.excluded : "");
    EXPECT_GE(ratio, run.low) << run.scenario << " " << run.row;
    EXPECT_LE(ratio, run.high) << run.scenario << " " << run.row;
  }
  print_errors("every run", all);
  print_errors("headline (issue 53: >= 8 runs, median <= 10%, max <= 20%)", headline);
  EXPECT_GE(headline.size(), 8u);  // the least number of judged runs
}

}  // namespace
}  // namespace twinsim
