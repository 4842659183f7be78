// Speed of the plan search's analytic pass: Llama-3 70B (seq 8192, global batch 1024
// sequences = 8M tokens per step) on DGX H100
// nodes, every plan of 1 to 4096 GPUs. Target: 200,000 candidate plans per second on
// one core. Reported as items_per_second.
#include <benchmark/benchmark.h>

#include "scenario/load.hpp"
#include "sim/search/analytic.hpp"
#include "sim/search/plan_search.hpp"

namespace twinsim {
namespace {

Scenario llama70b() {
  return load_scenario_text(R"(
model: llama3-70b
cluster: dgx-h100
training: {seq_len: 8192, global_batch: 1024, micro_batch: 1, precision: bf16}
plan: {tp: 8, pp: 1, dp: 1}
)");
}

SearchSpaceOptions whole_range() {
  SearchSpaceOptions o;
  o.min_gpus = 1, o.max_gpus = 4096;
  return o;
}

// The estimate alone, cycling over the first million candidates (layer prices cached
// after the first lap: the steady state of a long search).
void BM_AnalyticEstimate(benchmark::State& state) {
  const Scenario base = llama70b();
  const SearchSpace space = make_search_space(base, whole_range());
  std::vector<Candidate> plans;
  for_each_candidate(space, [&](const Candidate& c) {
    if (plans.size() < 1'000'000) plans.push_back(c);
  });
  AnalyticModel model(base, space);
  for (const Candidate& c : plans) model.estimate(c);  // warm the layer cache
  std::size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(model.estimate(plans[i]));
    if (++i == plans.size()) i = 0;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_AnalyticEstimate);

// The whole analytic pass (enumerate, estimate, keep the best and the Pareto front),
// cold layer cache included: every plan of Llama-3 70B on 1 to 4096 H100s.
void BM_AnalyticPassWholeRange(benchmark::State& state) {
  const Scenario base = llama70b();
  SearchOptions o;
  o.space = whole_range();
  std::int64_t n = 0;
  for (auto _ : state) {
    const AnalyticPass pass = run_analytic_pass(base, o, 20);
    n += pass.candidates;
    state.counters["candidates"] = static_cast<double>(pass.candidates);
    state.counters["fitting"] = static_cast<double>(pass.fitting);
    state.counters["pareto"] = static_cast<double>(pass.pareto.points().size());
  }
  state.SetItemsProcessed(n);
}
BENCHMARK(BM_AnalyticPassWholeRange)->Unit(benchmark::kSecond)->Iterations(1);

}  // namespace
}  // namespace twinsim
