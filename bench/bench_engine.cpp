// Engine throughput on a synthetic pipeline-like step: p stages, m micro-batches in 1F1B
// order, L layers per stage, each layer's forward/backward = attention, TP all-reduce,
// MLP, TP all-reduce on a compute and a TP-comm stream, and point-to-point transfers
// between stages as rendezvous tasks on both stages' PP streams. 64 x 1024 x 2 layers
// gives ~1.2M tasks, the size of a fast-mode 1T-parameter step.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <string>
#include <vector>

#include "sim/engine/simulator.hpp"

using namespace twinsim::engine;

namespace {

struct Shape {
  int stages, micro_batches, layers_per_stage;
};

struct Block {
  TaskId first, last;  // first and last op of a forward or backward block
};

// One forward (or backward, times 2) block of `layers` layers on stage `s`.
Block add_block(TaskGraph& g, ResourceId compute, ResourceId tp, int s, int mb, int layers,
                bool backward, CategoryId c_compute, CategoryId c_tp) {
  const char* dir = backward ? ".bwd" : ".fwd";
  double scale = backward ? 2.0 : 1.0;  // backward ~ 2x forward FLOPs
  Block b{-1, -1};
  for (int l = 0; l < layers; ++l) {
    std::string layer = "mb" + std::to_string(mb) + ".layer" + std::to_string(s * layers + l);
    TaskId ops[4] = {g.add_task(layer + ".attn" + dir, scale * 1.0e-3, c_compute, {compute}),
                     g.add_task(layer + ".attn.allreduce" + dir, 0.2e-3, c_tp, {tp}),
                     g.add_task(layer + ".mlp" + dir, scale * 1.5e-3, c_compute, {compute}),
                     g.add_task(layer + ".mlp.allreduce" + dir, 0.2e-3, c_tp, {tp})};
    if (b.last >= 0) g.add_dependency(b.last, ops[0]);
    for (int k = 1; k < 4; ++k) g.add_dependency(ops[k - 1], ops[k]);
    if (b.first < 0) b.first = ops[0];
    b.last = ops[3];
  }
  return b;
}

TaskGraph build_pipeline_step(Shape shape) {
  const int p = shape.stages, m = shape.micro_batches, L = shape.layers_per_stage;
  TaskGraph g;
  g.reserve(std::size_t(p) * m * (16 * L + 2), std::size_t(p) * m * (16 * L + 6),
            std::size_t(p) * m * (16 * L + 2) * 32);
  auto c_compute = g.category("compute"), c_tp = g.category("tp_comm"),
       c_pp = g.category("pp_comm");
  std::vector<ResourceId> compute(p), tp(p), pp_fwd(p), pp_bwd(p);
  for (int s = 0; s < p; ++s) {
    compute[s] = g.add_stream(s, "compute");
    tp[s] = g.add_stream(s, "tp_comm");
    pp_fwd[s] = g.add_stream(s, "pp_fwd");
    pp_bwd[s] = g.add_stream(s, "pp_bwd");
  }
  // Compute blocks in 1F1B order (Narayanan et al. 2021 §2.2.1), so insertion order is
  // program order on the compute and TP streams.
  std::vector<std::vector<Block>> fwd(p, std::vector<Block>(m)), bwd = fwd;
  for (int s = 0; s < p; ++s) {
    int warmup = std::min(p - s - 1, m);
    auto F = [&](int i) { fwd[s][i] = add_block(g, compute[s], tp[s], s, i, L, false, c_compute, c_tp); };
    auto B = [&](int i) { bwd[s][i] = add_block(g, compute[s], tp[s], s, i, L, true, c_compute, c_tp); };
    for (int i = 0; i < warmup; ++i) F(i);
    for (int i = 0; i < m - warmup; ++i) F(warmup + i), B(i);
    for (int i = m - warmup; i < m; ++i) B(i);
  }
  for (int i = 0; i < m; ++i) {
    for (int s = 0; s + 1 < p; ++s) {  // activations s -> s+1
      auto send = g.add_task("mb" + std::to_string(i) + ".stage" + std::to_string(s) + ".send.fwd",
                             0.1e-3, c_pp, {pp_fwd[s], pp_fwd[s + 1]});
      g.add_dependency(fwd[s][i].last, send);
      g.add_dependency(send, fwd[s + 1][i].first);
    }
    for (int s = p - 1; s > 0; --s) {  // gradients s -> s-1
      auto send = g.add_task("mb" + std::to_string(i) + ".stage" + std::to_string(s) + ".send.bwd",
                             0.1e-3, c_pp, {pp_bwd[s], pp_bwd[s - 1]});
      g.add_dependency(bwd[s][i].last, send);
      g.add_dependency(send, bwd[s - 1][i].first);
    }
    g.add_dependency(fwd[p - 1][i].last, bwd[p - 1][i].first);  // loss
  }
  return g;
}

constexpr Shape kStep1T{64, 1024, 2};

void BM_SimulatePipelineStep(benchmark::State& state) {
  TaskGraph g = build_pipeline_step(kStep1T);
  double makespan = 0.0;
  std::uint64_t events = 0;
  for (auto _ : state) {
    Timeline tl = simulate(g);
    makespan = tl.makespan_s;
    events += tl.events;
  }
  state.counters["tasks"] = g.num_tasks();
  state.counters["deps"] = static_cast<double>(g.num_dependencies());
  state.counters["events_per_s"] =
      benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
  state.counters["simulated_step_s"] = makespan;
}
BENCHMARK(BM_SimulatePipelineStep)->Unit(benchmark::kMillisecond)->MinTime(2.0);

// Building the graph is part of every simulated step too.
void BM_BuildPipelineStep(benchmark::State& state) {
  std::size_t tasks = 0;
  for (auto _ : state) {
    TaskGraph g = build_pipeline_step(kStep1T);
    tasks += g.num_tasks();
    benchmark::DoNotOptimize(g);
  }
  state.counters["tasks_per_s"] =
      benchmark::Counter(static_cast<double>(tasks), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_BuildPipelineStep)->Unit(benchmark::kMillisecond)->MinTime(2.0);

// Full-mode-like contention: 1024 ranks on 128 nodes; every iteration each rank
// computes, then sends to the same local rank of the next node through both nodes'
// shared uplinks (FIFO links), and its next compute waits for what it received.
TaskGraph build_shared_link_step(int ranks, int ranks_per_node, int iterations) {
  TaskGraph g;
  auto c_compute = g.category("compute"), c_net = g.category("pp_comm");
  int nodes = ranks / ranks_per_node;
  std::vector<ResourceId> compute(ranks), comm(ranks), uplink(nodes);
  for (int n = 0; n < nodes; ++n) uplink[n] = g.add_link("node" + std::to_string(n) + ".uplink");
  for (int r = 0; r < ranks; ++r) {
    compute[r] = g.add_stream(r, "compute");
    comm[r] = g.add_stream(r, "comm");
  }
  std::vector<TaskId> received(ranks, -1);
  for (int k = 0; k < iterations; ++k) {
    std::vector<TaskId> sent(ranks);
    for (int r = 0; r < ranks; ++r) {
      std::string tag = "it" + std::to_string(k) + ".rank" + std::to_string(r);
      auto work = g.add_task(tag + ".compute", 1e-3 * (1 + r % 3), c_compute, {compute[r]});
      if (received[r] >= 0) g.add_dependency(received[r], work);
      int peer = (r + ranks_per_node) % ranks;
      sent[r] = g.add_task(tag + ".send", 0.1e-3, c_net,
                           {comm[r], uplink[r / ranks_per_node], uplink[peer / ranks_per_node]});
      g.add_dependency(work, sent[r]);
    }
    for (int r = 0; r < ranks; ++r) received[(r + ranks_per_node) % ranks] = sent[r];
  }
  return g;
}

void BM_SimulateSharedLinks(benchmark::State& state) {
  TaskGraph g = build_shared_link_step(1024, 8, 200);
  double makespan = 0.0;
  std::uint64_t events = 0;
  for (auto _ : state) {
    Timeline tl = simulate(g);
    makespan = tl.makespan_s;
    events += tl.events;
  }
  state.counters["tasks"] = g.num_tasks();
  state.counters["events_per_s"] =
      benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
  state.counters["simulated_step_s"] = makespan;
}
BENCHMARK(BM_SimulateSharedLinks)->Unit(benchmark::kMillisecond)->MinTime(2.0);

}  // namespace
