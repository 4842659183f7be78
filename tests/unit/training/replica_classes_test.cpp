// Hybrid folding (sim/training/replica_classes.hpp): on fabrics the shift of
// replica_symmetry.hpp cannot fold (stages straddling leaves, pods cutting stages, single-
// plane leaves, stragglers), full mode simulates one replica per class and must give every
// GPU exactly the timeline full per rank gives it. Class counts derived by hand below.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "scenario/load.hpp"
#include "sim/engine/simulator.hpp"
#include "sim/training/replica_classes.hpp"
#include "sim/training/replica_symmetry.hpp"
#include "sim/training/step_graph.hpp"
#include "sim/training/training_report.hpp"

namespace twinsim {
namespace {

// A small GPT on nodes of 2 GPUs (2 NICs unless `cluster` says otherwise), TP 2: each
// data-parallel replica of a stage is one node, as a TP-8 replica is a DGX.
Scenario small(const std::string& cluster, const std::vector<std::string>& sets, int nics = 2) {
  return load_scenario_text(R"(
model: {layers: 4, hidden: 512, heads: 8, vocab: 8192, max_seq_len: 1024, bias: false}
cluster: {gpu: a100-sxm-80gb, gpus_per_node: 2, nccl_channels: 24,
  intra_node: {bandwidth_GBps: 300, latency_us: 2}, inter_node: {bandwidth_GBps: 5, latency_us: 5, nics_per_node: )" +
                                std::to_string(nics) + "}, " + cluster + R"(}
training: {seq_len: 1024, global_batch: 48, micro_batch: 1, precision: bf16}
plan: {tp: 2}
)",
                            sets);
}

struct Case {
  std::string what, cluster;
  std::vector<std::string> sets;
  std::vector<int> class_of;  // per DP index, derived by hand
  int nics = 2;
};

std::vector<Case> cases() {
  const std::vector<int> pairs{0, 0, 1, 1, 2, 2};
  return {
      // 2:1 spine, leaves of 4 nodes (2 slots per rail), stages of 6 nodes: stage 0 fills
      // leaf 0 (replicas 0-3) and half of leaf 1, whose other half is stage 1's replicas
      // 0-1 (Llama 3 405B's 784-node stages on 32-node leaves, small). Replicas 0-1 use leaf
      // 0 then the straddling leaf, 2-3 leaf 0 then leaf 2, 4-5 the straddling leaf then
      // leaf 2: three classes of two
      {"2:1 spine, stages straddle leaves", "fabric: {nodes_per_leaf: 4, oversubscription: 2}",
       {"plan.pp=4", "plan.dp=6"}, pairs},
      // the same with stragglers, 1F1B replaced by the interleaved schedule, ZeRO-1 overlapped
      {"4:1 spine, stragglers, interleaved, ZeRO-1",
       "straggler: 0.05, fabric: {nodes_per_leaf: 4, oversubscription: 4}",
       {"plan.pp=4", "plan.dp=6", "plan.schedule=interleaved", "plan.virtual_stages=1", "plan.zero=1",
        "plan.overlap_param_gather=true"},
       pairs},
      // three tiers: leaves of 2 nodes (1 slot per rail), pods of 4 nodes (4 core slots):
      // pod 1 holds stage 0's replicas 4-5 and stage 1's 0-1; leaves are whole in a stage
      {"three tiers, pods cut stages", "fabric: {nodes_per_leaf: 2, oversubscription: 2, nodes_per_pod: 4, "
                                       "pod_oversubscription: 2}",
       {"plan.pp=2", "plan.dp=6"}, pairs},
      // single-plane leaves of 4 one-NIC nodes (2 slots for the leaf), stragglers
      {"single plane, stragglers", "straggler: 0.1, fabric: {nodes_per_leaf: 4, oversubscription: 2, rail_optimized: false}",
       {"plan.pp=2", "plan.dp=6"}, pairs, 1},
      // replicas of two nodes (TP 4): stages of 12 nodes on leaves of 8, so leaf 1 holds
      // stage 0's replicas 4-5 and stage 1's 0-1 (nodes 8-15): the same three classes
      {"replicas of two nodes", "fabric: {nodes_per_leaf: 8, oversubscription: 2}",
       {"plan.tp=4", "plan.pp=4", "plan.dp=6"}, pairs},
      // half-node replicas (TP 1 on 2-GPU nodes, a NIC per GPU; TP 4 on a DGX, small): stages of
      // 12 replicas on 6 nodes, leaves of 4 nodes, as the first case; replica d sits on node
      // d/2 of its stage and rail d % 2. Replicas 0-3 use leaf units 0, 1, 3, 4 over the four
      // stages, 4-7 units 0, 2, 3, 5, 8-11 units 1, 2, 4, 5 (rails alike): three classes of four
      {"half-node replicas", "fabric: {nodes_per_leaf: 4, oversubscription: 2}",
       {"plan.tp=1", "plan.pp=4", "plan.dp=12"}, {0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2}},
      // half-node replicas, an odd DP, single-plane leaves of 2 nodes, stragglers: stage 0's
      // replicas 0-4 on nodes 0, 0, 1, 1, 2 (leaf units 0, 0, 0, 0, 1), stage 1's on nodes 2, 3,
      // 3, 4, 4 (units 1, 1, 1, 2, 2): replicas 0-2 use units (0, 1), 3 (0, 2), 4 (1, 2); two
      // replicas of a class share a node and its leaf (each transfer weighing 2 there)
      {"half-node replicas, odd DP, single plane", "straggler: 0.05, fabric: {nodes_per_leaf: 2, oversubscription: 2, "
                                                   "rail_optimized: false}",
       {"plan.tp=1", "plan.pp=2", "plan.dp=5", "training.global_batch=40"}, {0, 0, 0, 1, 2}},
      // a leaf per stage (8 nodes): every replica alike, one class of 8, each transfer
      // weighing 8 on its 2:1 uplink
      {"a leaf per stage", "fabric: {nodes_per_leaf: 8, oversubscription: 2}",
       {"plan.pp=2", "plan.dp=8", "training.global_batch=64"}, {0, 0, 0, 0, 0, 0, 0, 0}},
  };
}

TEST(ReplicaClasses, ClassesDerivedByHand) {
  for (const Case& c : cases()) {
    const Scenario s = small(c.cluster, c.sets, c.nics);
    EXPECT_EQ(symmetric_replicas(s), s.plan.dp) << c.what;  // the shift folds nothing
    ASSERT_TRUE(hybrid_folding_applies(s)) << c.what;
    EXPECT_EQ(replica_classes(s).class_of, c.class_of) << c.what;
  }
  // half-node replicas sharing a NIC (one per 2-GPU node) would share its queue: not folded
  const Scenario shared = small("fabric: {nodes_per_leaf: 4, oversubscription: 2}",
                                {"plan.tp=1", "plan.pp=4", "plan.dp=12"}, 1);
  EXPECT_FALSE(hybrid_folding_applies(shared));
}

// Every GPU's compute, TP and DP streams run the same tasks at the same instants as its
// class's simulated replica, and the step is the same, to the last bit.
TEST(ReplicaClasses, FoldedStepEqualsPerRankStepForEveryGpu) {
  for (const Case& c : cases()) {
    const Scenario s = small(c.cluster, c.sets, c.nics);
    const StepCosts costs = price_step(s);
    const StepGraph folded = build_step_graph(s, costs, Fidelity::full);
    const StepGraph every = build_step_graph(s, costs, Fidelity::full_per_rank);
    const engine::Timeline a = engine::simulate(folded.graph), b = engine::simulate(every.graph);
    EXPECT_EQ(a.makespan_s, b.makespan_s) << c.what;
    const ReplicaClasses classes = replica_classes(s);
    const int per_replica = s.plan.tp * s.plan.cp;
    EXPECT_EQ(folded.simulated_gpus, s.plan.pp * per_replica * classes.classes()) << c.what;
    for (int stage = 0; stage < s.plan.pp; ++stage)
      for (std::size_t g = 0; g < every.ranks[stage].size(); ++g) {
        const int d = static_cast<int>(g) / per_replica, i = static_cast<int>(g) % per_replica;
        const StageStreams& image = every.ranks[stage][g];
        const StageStreams& simulated = folded.ranks[stage][static_cast<std::size_t>(i + per_replica * classes.class_of[d])];
        for (auto stream : {&StageStreams::compute, &StageStreams::dp, &StageStreams::tp}) {
          const auto& x = folded.graph.tasks_on(simulated.*stream);
          const auto& y = every.graph.tasks_on(image.*stream);
          ASSERT_EQ(x.size(), y.size()) << c.what;
          for (std::size_t k = 0; k < x.size(); ++k) {
            ASSERT_EQ(folded.graph.name(x[k]), every.graph.name(y[k])) << c.what;
            ASSERT_EQ(a.start_s[x[k]], b.start_s[y[k]]) << c.what << " rank " << image.rank << " task " << k;
            ASSERT_EQ(a.end_s[x[k]], b.end_s[y[k]]) << c.what << " rank " << image.rank << " task " << k;
          }
        }
      }
  }
}

// The oversubscription is felt: the straddling fabric's step is slower than the same
// cluster non-blocking, and slower again at 4:1.
TEST(ReplicaClasses, OversubscriptionSlowsTheFoldedStep) {
  const std::vector<std::string> plan{"plan.pp=4", "plan.dp=6"};
  const double plain = predict_training(small("fabric: {nodes_per_leaf: 4}", plan), "", Fidelity::full).step_s;
  const double two = predict_training(small("fabric: {nodes_per_leaf: 4, oversubscription: 2}", plan), "", Fidelity::full).step_s;
  const double four = predict_training(small("fabric: {nodes_per_leaf: 4, oversubscription: 4}", plan), "", Fidelity::full).step_s;
  EXPECT_GT(two, plain);
  EXPECT_GT(four, two);
}

}  // namespace
}  // namespace twinsim
