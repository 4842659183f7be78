// Full-fidelity training simulation: every GPU of a 1024-GPU plan, with its collectives
// and shared NICs (issue target: under 30 s per simulated step).
#include <benchmark/benchmark.h>

#include "scenario/load.hpp"
#include "sim/training/training_report.hpp"

namespace twinsim {
namespace {

// GPT-3 175B on 1024 A100s: TP 8 x PP 8 x DP 16, 96 micro-batches per replica
Scenario gpt3_on_1024() {
  return load_scenario_text(R"(
model: gpt3-175b
cluster: dgx-a100-80gb
training: {seq_len: 2048, global_batch: 1536, micro_batch: 1}
plan: {tp: 8, pp: 8, dp: 16, sequence_parallel: true, zero: 1, recompute: selective}
)");
}

void BM_FullMode1024Gpus(benchmark::State& state) {
  const Scenario s = gpt3_on_1024();
  TrainingPrediction p;
  for (auto _ : state) p = predict_training(s, "", Fidelity::full);
  state.counters["tasks"] = static_cast<double>(p.tasks);
  state.counters["events_per_s"] = benchmark::Counter(static_cast<double>(p.events), benchmark::Counter::kIsRate);
  state.counters["step_s"] = p.step_s;
}
BENCHMARK(BM_FullMode1024Gpus)->Unit(benchmark::kSecond)->Iterations(1);

void BM_FastModeSameScenario(benchmark::State& state) {
  const Scenario s = gpt3_on_1024();
  TrainingPrediction p;
  for (auto _ : state) p = predict_training(s, "", Fidelity::fast);
  state.counters["tasks"] = static_cast<double>(p.tasks);
  state.counters["step_s"] = p.step_s;
}
BENCHMARK(BM_FastModeSameScenario)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace twinsim
