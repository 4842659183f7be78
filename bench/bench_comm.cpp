// MPI collectives of the executor's communicator on this host, nccl-tests style: time per
// call (the slowest rank's, as nccl-tests reports) and bus bandwidth for a sweep of sizes.
// Run under mpirun: `mpirun -np 2 --oversubscribe build/bench/bench_comm`; only rank 0
// prints. Iteration counts are fixed so that every rank runs the same collectives.
// The `*_amid_work` cases run a training step's kind of work between the timed calls
// (allocating, writing and freeing 18 MiB of activation-sized buffers), which takes the
// caches as a step's ops do: an all-gather of 2 MiB ran 3.5x slower amid it than back to
// back (exec/runtime/README.md has the figures).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <vector>

#include "exec/runtime/mpi_communicator.hpp"

namespace twinsim::exec {
namespace {

Communicator* g_world = nullptr;

enum class Op { all_reduce, all_gather, reduce_scatter, all_to_all };

// Bus bandwidth factor (nccl-tests, doc/PERFORMANCE.md): the bytes each rank's link moves
// per byte of the operation's size, so that it compares with the link's peak.
double bus_factor(Op op, int n) {
  if (op == Op::all_reduce) return 2.0 * (n - 1) / n;
  return static_cast<double>(n - 1) / n;
}

void run_op(Communicator& c, Op op, float* a, float* b, std::size_t total, std::size_t part) {
  switch (op) {
    case Op::all_reduce: c.all_reduce(a, total); break;
    case Op::all_gather: c.all_gather(a, b, part); break;
    case Op::reduce_scatter: c.reduce_scatter(a, b, part); break;
    case Op::all_to_all: c.all_to_all(a, b, part); break;
  }
}

// What a training step does between two of its collectives, in miniature: tensors of a
// few MiB allocated, written and freed (exec/model/tensor.hpp draws them from the heap).
void step_like_work() {
  for (std::size_t mib : {4, 12, 2}) {
    std::vector<float> activation(mib << 18, 1.0f);
    benchmark::DoNotOptimize(activation.data());
  }
}

void BM_Collective(benchmark::State& state, Op op, bool amid_work) {
  Communicator& c = *g_world;
  const auto n = static_cast<std::size_t>(c.size());
  const auto bytes = static_cast<std::size_t>(state.range(0));  // the operation's size, nccl-tests' "size"
  const std::size_t total = bytes / sizeof(float);
  const std::size_t part = std::max<std::size_t>(1, total / n);
  std::vector<float> a(part * n, 1.0f), b(part * n, 0.0f);
  float best = 1e30f;  // the mean suffers from other processes on a shared host; the best less so
  for (auto _ : state) {
    if (amid_work) step_like_work();
    c.barrier();
    const auto t0 = std::chrono::steady_clock::now();
    run_op(c, op, a.data(), b.data(), total, part);
    float seconds = std::chrono::duration<float>(std::chrono::steady_clock::now() - t0).count();
    c.all_reduce(&seconds, 1, ReduceOp::max);
    state.SetIterationTime(seconds);
    best = std::min(best, seconds);
  }
  state.counters["ranks"] = static_cast<double>(n);
  // algorithm bandwidth = size / time; bus bandwidth scales it by the factor above
  state.counters["busbw_GBps"] = benchmark::Counter(
      static_cast<double>(bytes) * bus_factor(op, c.size()) / 1e9 * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate);
  state.counters["best_us"] = best * 1e6;
  state.counters["best_busbw_GBps"] = static_cast<double>(bytes) * bus_factor(op, c.size()) / 1e9 / best;
}

void sizes(benchmark::internal::Benchmark* b) {
  for (long bytes = 4 << 10; bytes <= 16 << 20; bytes *= 8) b->Arg(bytes);
  b->UseManualTime()->Iterations(30);
}

BENCHMARK_CAPTURE(BM_Collective, all_reduce, Op::all_reduce, false)->Apply(sizes);
BENCHMARK_CAPTURE(BM_Collective, all_gather, Op::all_gather, false)->Apply(sizes);
BENCHMARK_CAPTURE(BM_Collective, reduce_scatter, Op::reduce_scatter, false)->Apply(sizes);
BENCHMARK_CAPTURE(BM_Collective, all_to_all, Op::all_to_all, false)->Apply(sizes);
BENCHMARK_CAPTURE(BM_Collective, all_reduce_amid_work, Op::all_reduce, true)->Apply(sizes);
BENCHMARK_CAPTURE(BM_Collective, all_gather_amid_work, Op::all_gather, true)->Apply(sizes);
BENCHMARK_CAPTURE(BM_Collective, reduce_scatter_amid_work, Op::reduce_scatter, true)->Apply(sizes);

class NullReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

}  // namespace
}  // namespace twinsim::exec

int main(int argc, char** argv) {
  twinsim::exec::MpiSession session(&argc, &argv);
  auto world = twinsim::exec::MpiCommunicator::world();
  twinsim::exec::g_world = world.get();
  benchmark::Initialize(&argc, argv);
  if (world->rank() == 0) {
    benchmark::RunSpecifiedBenchmarks();
  } else {
    twinsim::exec::NullReporter quiet;
    benchmark::RunSpecifiedBenchmarks(&quiet);
  }
  benchmark::Shutdown();
  return 0;
}
