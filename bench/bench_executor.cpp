// Training throughput of the CPU executor on tiny-gpt (models/catalog/tiny-gpt.yaml):
// tokens per second of whole steps (forward, backward, grad reduction, AdamW).
//   build-exec/bench/bench_executor                               # 1 rank
//   mpirun -np 2 --oversubscribe build-exec/bench/bench_executor  # 2 ranks: DP2 and TP2
// Every rank runs the same fixed number of steps in lockstep; rank 0 prints.
#include <benchmark/benchmark.h>

#include <cstdio>

#include "exec/runtime/data.hpp"
#include "exec/runtime/mpi_communicator.hpp"
#include "exec/train/trainer.hpp"
#include "scenario/load.hpp"

namespace {

using namespace twinsim;

// MPI must be up before the benchmarks are registered and run (benchmark_main owns main).
struct MpiForBench {
  exec::MpiSession session;
  std::unique_ptr<exec::MpiCommunicator> world = exec::MpiCommunicator::world();
  MpiForBench() {
    if (world->rank() != 0) std::freopen("/dev/null", "w", stdout);  // one report
  }
};
MpiForBench& mpi() {
  static MpiForBench m;
  return m;
}
[[maybe_unused]] MpiForBench& started_before_main = mpi();

exec::TrainConfig tiny_gpt(int tp, int dp) {
  exec::TrainConfig c;
  c.model = catalog_model("tiny-gpt");
  c.plan.tp = tp;
  c.plan.dp = dp;
  c.training.seq_len = 64;
  c.training.global_batch = 8;
  c.training.micro_batch = 2;
  c.training.precision = Dtype::fp32;
  return c;
}

void run_steps(benchmark::State& state, const exec::TrainConfig& c) {
  exec::Communicator& world = *mpi().world;
  if (world.size() != c.plan.world_size()) {
    state.SkipWithError("needs mpirun -np tp*dp");
    return;
  }
  exec::ProcessGroups groups(world, c.plan);
  exec::SyntheticTokens data(c.seed, static_cast<int>(c.model.vocab));
  exec::Trainer trainer(c, groups, data);
  trainer.step();  // warm-up: first touch of every buffer
  for (auto _ : state) {
    const exec::StepResult r = trainer.step();
    state.SetIterationTime(r.seconds);  // the slowest rank's step
  }
  const double tokens = static_cast<double>(c.training.global_batch * c.training.seq_len);
  state.counters["tokens_per_s"] = benchmark::Counter(tokens * state.iterations(), benchmark::Counter::kIsRate);
  state.counters["ranks"] = world.size();
}

void BM_TinyGptStep(benchmark::State& state) {
  run_steps(state, tiny_gpt(static_cast<int>(state.range(0)), static_cast<int>(state.range(1))));
}
// {tp, dp}; fixed iterations so every rank runs the same number of collective steps
BENCHMARK(BM_TinyGptStep)->ArgNames({"tp", "dp"})->Args({1, 1})->Args({1, 2})->Args({2, 1})
    ->Iterations(5)->UseManualTime()->Unit(benchmark::kMillisecond);

}  // namespace
