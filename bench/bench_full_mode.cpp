// Full-fidelity training simulation at scale (issue #24): every GPU of the plan, its
// collectives and shared NICs, with the data-parallel replicas folded by symmetry
// (--fidelity full) and, for reference, simulated one by one (full-per-rank).
//
// Llama 3 405B as Meta ran it (scenarios/training/llama3-405b-h100.yaml: TP 8, PP 16,
// interleaved, 16 micro-batches per replica), with DP from 8 to 784: 1,024 to 100,352
// H100s. us_per_gpu is the wall time per GPU of the plan: the cost curve.
#include <benchmark/benchmark.h>

#include <chrono>
#include <string>
#include <vector>

#include "scenario/load.hpp"
#include "sim/training/training_report.hpp"

namespace twinsim {
namespace {

Scenario llama405b(int dp, bool interleaved) {
  std::vector<std::string> sets{"plan.dp=" + std::to_string(dp), "training.global_batch=" + std::to_string(16 * dp),
                                "cluster.nodes=" + std::to_string(16 * dp)};
  if (!interleaved) sets.insert(sets.end(), {"plan.schedule=1f1b", "plan.virtual_stages=1"});
  return load_scenario_file(TWINSIM_SOURCE_DIR "/scenarios/training/llama3-405b-h100.yaml", sets);
}

// Runs the step `state` asks for and reports its size and its wall time per GPU of the plan.
void run(benchmark::State& state, const Scenario& s, Fidelity fidelity) {
  TrainingPrediction p;
  double seconds = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    p = predict_training(s, "", fidelity);
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  const double gpus = static_cast<double>(s.plan.world_size());
  state.counters["gpus"] = gpus;
  state.counters["simulated_gpus"] = p.simulated_gpus;
  state.counters["tasks"] = static_cast<double>(p.tasks);
  state.counters["step_s"] = p.step_s;
  state.counters["us_per_gpu"] = 1e6 * seconds / static_cast<double>(state.iterations()) / gpus;
}

void BM_Llama405B(benchmark::State& state, Fidelity fidelity, bool interleaved) {
  run(state, llama405b(static_cast<int>(state.range(0)), interleaved), fidelity);
}
// DP 8, 32, 128 (Meta's 16,384 GPUs), 784 (100,352 GPUs)
BENCHMARK_CAPTURE(BM_Llama405B, interleaved_full, Fidelity::full, true)
    ->Arg(8)->Arg(32)->Arg(128)->Arg(784)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Llama405B, 1f1b_full, Fidelity::full, false)->Arg(784)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Llama405B, interleaved_per_rank, Fidelity::full_per_rank, true)
    ->Arg(8)->Arg(32)->Arg(128)->Unit(benchmark::kMillisecond)->Iterations(1);

// Behind an oversubscribed fabric the shift folds nothing (784-node stages straddle the
// 32-node leaves): hybrid folding by class (sim/training/replica_classes.hpp), 49 classes.
// 2:1 spine; three tiers: 2:1 spine, pods of 256 nodes behind a 2:1 core.
void BM_Llama405BFabric(benchmark::State& state, const std::vector<std::string>& fabric) {
  std::vector<std::string> sets{"plan.dp=784", "training.global_batch=12544", "cluster.nodes=12544"};
  sets.insert(sets.end(), fabric.begin(), fabric.end());
  run(state, load_scenario_file(TWINSIM_SOURCE_DIR "/scenarios/training/llama3-405b-h100.yaml", sets), Fidelity::full);
}
BENCHMARK_CAPTURE(BM_Llama405BFabric, spine_2to1, std::vector<std::string>{"cluster.fabric.oversubscription=2"})
    ->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(BM_Llama405BFabric, three_tier,
                  std::vector<std::string>{"cluster.fabric.oversubscription=2", "cluster.fabric.nodes_per_pod=256",
                                           "cluster.fabric.pod_oversubscription=2"})
    ->Unit(benchmark::kMillisecond)->Iterations(1);

// GPT-3 175B on 98,304 A100s: TP 8, PP 16, DP 768, 128 micro-batches per replica
void BM_Gpt3On98304Gpus(benchmark::State& state) {
  const Scenario s = load_scenario_text(R"(
model: gpt3-175b
cluster: {preset: dgx-a100-80gb, nodes: 12288}
training: {seq_len: 2048, global_batch: 98304, micro_batch: 1}
plan: {tp: 8, pp: 16, dp: 768, sequence_parallel: true, zero: 1, recompute: selective}
)");
  run(state, s, Fidelity::full);
}
BENCHMARK(BM_Gpt3On98304Gpus)->Unit(benchmark::kMillisecond);

// GPT-3 175B on 1024 A100s: TP 8 x PP 8 x DP 16, 96 micro-batches per replica
Scenario gpt3_on_1024() {
  return load_scenario_text(R"(
model: gpt3-175b
cluster: dgx-a100-80gb
training: {seq_len: 2048, global_batch: 1536, micro_batch: 1}
plan: {tp: 8, pp: 8, dp: 16, sequence_parallel: true, zero: 1, recompute: selective}
)");
}

void BM_Gpt3On1024Gpus(benchmark::State& state, Fidelity fidelity) {
  run(state, gpt3_on_1024(), fidelity);
}
BENCHMARK_CAPTURE(BM_Gpt3On1024Gpus, full, Fidelity::full)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Gpt3On1024Gpus, per_rank, Fidelity::full_per_rank)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(BM_Gpt3On1024Gpus, fast, Fidelity::fast)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace twinsim
