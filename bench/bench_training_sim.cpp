// Speed of the fast-mode training simulator on the largest run of Narayanan et al. 2021,
// Table 1: the 1T-parameter GPT (160 heads, h 25600, 128 layers) with TP 8, PP 64 on 3072
// A100s, batch 3072 (512 micro-batches per pipeline). Target: one simulated step in under
// a second on one core (issue 3, "Speed"). The whole prediction is timed, then its parts:
// pricing the layers, building the task graph, and running the engine (events/s).
#include <benchmark/benchmark.h>

#include "scenario/load.hpp"
#include "sim/engine/simulator.hpp"
#include "sim/training/step_graph.hpp"
#include "sim/training/training_report.hpp"

namespace {

using namespace twinsim;

const Scenario& one_trillion() {
  static const Scenario s =
      load_scenario_file(TWINSIM_SOURCE_DIR "/scenarios/validation/training/narayanan2021-table1-1t.yaml");
  return s;
}

void BM_PredictStep1T(benchmark::State& state) {
  const Scenario& s = one_trillion();
  std::uint64_t events = 0;
  std::size_t tasks = 0;
  for (auto _ : state) {
    const TrainingPrediction p = predict_training(s);
    events = p.events;
    tasks = p.tasks;
    benchmark::DoNotOptimize(p.step_s);
  }
  state.counters["tasks"] = static_cast<double>(tasks);
  state.counters["events"] = static_cast<double>(events);
  state.counters["events_per_s"] =
      benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_PredictStep1T)->Unit(benchmark::kMillisecond)->MinTime(2.0);

void BM_PriceStep1T(benchmark::State& state) {
  const Scenario& s = one_trillion();
  for (auto _ : state) benchmark::DoNotOptimize(price_step(s));
}
BENCHMARK(BM_PriceStep1T)->Unit(benchmark::kMillisecond);

void BM_BuildGraph1T(benchmark::State& state) {
  const Scenario& s = one_trillion();
  const StepCosts costs = price_step(s);
  for (auto _ : state) benchmark::DoNotOptimize(build_step_graph(s, costs));
}
BENCHMARK(BM_BuildGraph1T)->Unit(benchmark::kMillisecond);

void BM_Engine1T(benchmark::State& state) {
  const Scenario& s = one_trillion();
  const StepGraph g = build_step_graph(s, price_step(s));
  std::uint64_t events = 0;
  for (auto _ : state) {
    const engine::Timeline tl = engine::simulate(g.graph);
    events = tl.events;
    benchmark::DoNotOptimize(tl.makespan_s);
  }
  state.counters["events_per_s"] =
      benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Engine1T)->Unit(benchmark::kMillisecond);

}  // namespace
