// How long a serving simulation of 10,000 requests takes (issue 4 target: under 5 s).
// Llama-2-7B fp16 on one A100-80GB (scenarios/inference/llama2-7b-a100.yaml), Poisson
// arrivals at 20 requests/s of 128-token prompts and 128-token answers: a loaded but
// stable server (tens of sequences per pass). A second case loads Llama-2-70B on
// 4 x H100 with TP 2 x PP 2 (two virtual engines) with 512-token prompts.
#include <benchmark/benchmark.h>

#include "scenario/load.hpp"
#include "sim/inference/serving.hpp"
#include "sim/inference/serving_report.hpp"

namespace twinsim {
namespace {

Scenario scenario(const std::string& model, const std::string& node, int gpus, int tp, int pp, int prompt, int output) {
  return load_scenario_text("model: " + model + "\ncluster: {preset: " + node + ", gpus_per_node: " +
                            std::to_string(gpus) + ", nodes: 1}\ninference: {prompt_len: " + std::to_string(prompt) +
                            ", output_len: " + std::to_string(output) + ", weight_dtype: fp16, kv_dtype: fp16}\n" +
                            "plan: {tp: " + std::to_string(tp) + ", pp: " + std::to_string(pp) + "}\n");
}

void run(benchmark::State& state, const Scenario& s, double rate) {
  const auto requests = poisson_requests(10000, rate, 1, s.inference->prompt_len, s.inference->output_len);
  ServingSummary summary;
  for (auto _ : state) {
    const ServingResult r = simulate_serving(s, requests);
    summary = summarize(r);
    benchmark::DoNotOptimize(summary);
  }
  state.counters["passes"] = static_cast<double>(summary.passes);
  state.counters["tpot_p50_ms"] = 1e3 * summary.tpot.p50_s;
  state.counters["ttft_p99_ms"] = 1e3 * summary.ttft.p99_s;
  state.counters["out_tok_per_s"] = summary.output_tokens_per_s;
}

void BM_Serve10kLlama2_7bA100(benchmark::State& state) {
  run(state, scenario("llama2-7b", "dgx-a100-80gb", 1, 1, 1, 128, 128), 20.0);
}
BENCHMARK(BM_Serve10kLlama2_7bA100)->Unit(benchmark::kMillisecond);

void BM_Serve10kLlama2_70b4xH100Tp2Pp2(benchmark::State& state) {
  run(state, scenario("llama2-70b", "dgx-h100", 4, 2, 2, 512, 128), 10.0);
}
BENCHMARK(BM_Serve10kLlama2_70b4xH100Tp2Pp2)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace twinsim
