// The step simulation split over processes (simulate(graph, exchange, ...)): with the
// processes played by threads meeting at a barrier, every process's timeline equals the
// single-process engine's, bit for bit, for 1 to 4 processes and the three fidelities.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "scenario/load.hpp"
#include "sim/engine/simulator.hpp"
#include "sim/training/step_graph.hpp"
#include "sim/training/training_report.hpp"
#include "tests/unit/engine/thread_exchange.hpp"

namespace twinsim {
namespace {

Scenario scenario(const std::vector<std::string>& sets) {
  return load_scenario_text(R"(
model: {layers: 8, hidden: 512, heads: 8, vocab: 8192, max_seq_len: 1024, bias: false}
cluster: {gpu: a100-sxm-80gb, gpus_per_node: 8, nccl_channels: 24, straggler: 0.02,
  intra_node: {bandwidth_GBps: 300, latency_us: 2}, inter_node: {bandwidth_GBps: 5, latency_us: 5, nics_per_node: 4},
  fabric: {nodes_per_leaf: 2, oversubscription: 2}}
training: {seq_len: 1024, global_batch: 32, micro_batch: 1, precision: bf16}
plan: {}
)", sets);
}

TEST(SplitSimulation, EveryProcessGetsTheSingleProcessTimeline) {
  const std::vector<std::vector<std::string>> plans{
      {"plan.tp=2", "plan.pp=4", "plan.dp=4", "plan.zero=1"},
      {"plan.tp=4", "plan.pp=4", "plan.dp=2", "plan.zero=3", "plan.schedule=interleaved", "plan.virtual_stages=2"},
      {"plan.tp=1", "plan.pp=2", "plan.dp=8", "plan.zero=2", "plan.overlap_grad_reduce=false"},
      // stages of 6 nodes on leaves of 4: full mode folds by class (replica_classes.hpp)
      {"plan.tp=8", "plan.pp=2", "plan.dp=6", "training.global_batch=24", "cluster.fabric.nodes_per_leaf=4"}};
  for (const auto& sets : plans)
    for (Fidelity f : {Fidelity::fast, Fidelity::full, Fidelity::full_per_rank}) {
      const Scenario s = scenario(sets);
      const StepGraph g = build_step_graph(s, price_step(s), f);
      const engine::Timeline one = engine::simulate(g.graph);
      for (int n : {1, 2, 3, 4}) {
        Table table(n);
        std::vector<engine::Timeline> got(n);
        std::vector<std::thread> threads;
        for (int p = 0; p < n; ++p)
          threads.emplace_back([&, p] {
            ThreadExchange ex(table, p);
            // ranks stage by stage, as predict_training splits them
            const int per_stage = static_cast<int>(g.ranks[0].size()) == 1 && f == Fidelity::fast
                                      ? 1 : s.plan.tp * s.plan.cp * s.plan.dp;
            got[p] = engine::simulate(g.graph, ex, [&](int rank) { return (rank / per_stage) * n / s.plan.pp; });
          });
        for (auto& t : threads) t.join();
        for (int p = 0; p < n; ++p) {
          const std::string what = sets[0] + " " + sets[1] + " fidelity " + std::to_string(static_cast<int>(f)) +
                                   " processes " + std::to_string(n) + " process " + std::to_string(p);
          ASSERT_EQ(got[p].makespan_s, one.makespan_s) << what;
          ASSERT_EQ(got[p].events, one.events) << what;
          ASSERT_EQ(got[p].start_s, one.start_s) << what;
          ASSERT_EQ(got[p].end_s, one.end_s) << what;
          ASSERT_EQ(got[p].resource_busy_s, one.resource_busy_s) << what;
        }
      }
    }
}

}  // namespace
}  // namespace twinsim
