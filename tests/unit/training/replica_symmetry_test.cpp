// Full mode folded by symmetry (sim/training/replica_symmetry.hpp) against full mode per
// rank: the same timeline for every GPU, exactly, over plans and cluster layouts.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "scenario/errors.hpp"
#include "scenario/load.hpp"
#include "sim/engine/simulator.hpp"
#include "sim/training/replica_symmetry.hpp"
#include "sim/training/step_ranks.hpp"
#include "sim/training/step_graph.hpp"
#include "sim/training/training_report.hpp"
#include "tests/unit/scenario/device_alone.hpp"

namespace twinsim {
namespace {

// A small GPT (dense) or MoE on nodes of `gpus_per_node` GPUs and `nics` NICs, with a
// network slow enough that NICs shared by data-parallel and pipeline traffic contend.
Scenario small(const std::string& cluster, const std::vector<std::string>& sets, bool moe = false) {
  const std::string model = moe ? R"(
model: {layers: 4, hidden: 512, heads: 8, vocab: 8192, max_seq_len: 1024, activation: swiglu, norm: rmsnorm,
        position: rope, bias: false, moe: {experts: 8, top_k: 2, expert_ffn_hidden: 1024}})"
                                : R"(
model: {layers: 4, hidden: 512, heads: 8, vocab: 8192, max_seq_len: 1024, bias: false})";
  return test::device_alone(model + "\ncluster: {" + cluster + R"(}
training: {seq_len: 1024, global_batch: 48, micro_batch: 1, precision: bf16}
plan: {}
)",
                            sets);
}

const std::string kDgx = R"(gpu: a100-sxm-80gb, gpus_per_node: 8, nccl_channels: 24,
  intra_node: {bandwidth_GBps: 300, latency_us: 2}, inter_node: {bandwidth_GBps: 5, latency_us: 5, nics_per_node: 8})";

std::string with_nics(int nics) {
  std::string c = kDgx;
  c.replace(c.find("nics_per_node: 8"), 16, "nics_per_node: " + std::to_string(nics));
  return c;
}

struct Case {
  std::string cluster;
  std::vector<std::string> sets;
  bool moe = false;
  int replicas = 0;  // symmetric_replicas, derived by hand
};

std::vector<Case> cases() {
  return {
      // a stage of 2 x 4 = 8 GPUs is one node: every shift keeps it whole
      {kDgx, {"plan.tp=2", "plan.pp=2", "plan.dp=4"}, false, 1},
      // TP 4 on 8-GPU nodes: replicas pair up on a node, the shift must move whole nodes;
      // GPUs j and j+4 share a NIC; ZeRO-3 gathers every layer over 16 nodes
      {with_nics(4), {"plan.tp=4", "plan.pp=2", "plan.dp=8", "plan.zero=3"}, false, 2},
      // ZeRO-3 without overlap: whole-stage collectives on the compute stream; one NIC per node
      {with_nics(1), {"plan.tp=1", "plan.pp=2", "plan.dp=16", "plan.zero=3", "plan.overlap_grad_reduce=false"}, false, 8},
      // context and expert parallelism: a shift keeps blocks of ep (cp, dp) positions whole
      {kDgx, {"plan.tp=2", "plan.cp=2", "plan.pp=2", "plan.dp=4", "plan.ep=4", "plan.zero=2", "plan.sequence_parallel=true"},
       true, 2},
      // MoE parallel folding: EP 4 over both TP ranks of 2 replicas (expert TP 1); blocks of 4
      // indices are kept whole by a shift of 2 replicas, but nodes only by 4
      {kDgx, {"plan.tp=2", "plan.pp=2", "plan.dp=8", "plan.ep=4", "plan.expert_tp=1", "plan.sequence_parallel=true"},
       true, 4},
      // stages of 4 GPUs, two to a node; stragglers; interleaved schedule
      {kDgx + ", straggler: 0.05",
       {"plan.tp=2", "plan.pp=4", "plan.dp=2", "plan.schedule=interleaved", "plan.virtual_stages=1"}, false, 1},
      // 6 replicas of one GPU per stage over 8-GPU nodes: stages straddle nodes, nothing folds
      {kDgx, {"plan.tp=1", "plan.pp=4", "plan.dp=6"}, false, 6},
      // both replicas on one node, GPUs j and j+4 (replicas 0 and 1) sharing a NIC for
      // their pipeline sends: replica 0 alone would miss replica 1's traffic, nothing folds
      {with_nics(4), {"plan.tp=4", "plan.pp=2", "plan.dp=2"}, false, 2},
      // the same with a NIC per GPU: replica 1 is replica 0's image
      {kDgx, {"plan.tp=4", "plan.pp=2", "plan.dp=2"}, false, 1},
      // oversubscribed rail-optimised fabric, 2 nodes per leaf, uplinks of 1 slot (2 ports / 4):
      // the shift must move whole leaves, so replicas 0-1 stand for 2-3
      {kDgx + ", fabric: {nodes_per_leaf: 2, oversubscription: 4}", {"plan.tp=8", "plan.pp=2", "plan.dp=4"}, false, 2},
      // single-plane fabric, one leaf of 4 nodes per stage whose uplink (16 of 32 ports)
      // every replica shares: the shift folds nothing (hybrid folding, with a NIC per GPU,
      // makes the 8 replicas one class: replica_classes.hpp)
      {kDgx + ", fabric: {nodes_per_leaf: 4, oversubscription: 2, rail_optimized: false}",
       {"plan.tp=4", "plan.pp=2", "plan.dp=8", "plan.zero=2"}, false, 8},
      // leaves of one node: TP 4 replicas pair on a node, the pair shares each leaf
      {kDgx + ", fabric: {nodes_per_leaf: 1, oversubscription: 8, rail_optimized: false}",
       {"plan.tp=4", "plan.pp=2", "plan.dp=8"}, false, 2},
      // pods of 2 nodes behind a 4:1 core (16 NIC ports, 4 slots), non-blocking leaves: a
      // replica is a node, so the shift must move whole pods: replicas 0-1 stand for 2-3
      {kDgx + ", fabric: {nodes_per_leaf: 1, nodes_per_pod: 2, pod_oversubscription: 4}",
       {"plan.tp=8", "plan.pp=2", "plan.dp=4"}, false, 2},
      // oversubscribed leaves of 2 nodes inside pods of 4: a pod holds replicas 0-3 of a
      // stage, so the shift moves whole pods and replicas 0-3 stand for 4-7
      {kDgx + ", fabric: {nodes_per_leaf: 2, oversubscription: 4, nodes_per_pod: 4, pod_oversubscription: 2}",
       {"plan.tp=8", "plan.pp=2", "plan.dp=8", "plan.zero=1"}, false, 4},
      // ZeRO-1 with the parameter gather overlapped, TP comm overlapped, DP over 8 nodes
      {kDgx, {"plan.tp=8", "plan.pp=2", "plan.dp=8", "plan.zero=1", "plan.overlap_param_gather=true",
              "plan.tp_comm_overlap=true", "plan.sequence_parallel=true"}, false, 1},
  };
}

TEST(ReplicaSymmetry, SmallestShiftThatKeepsNodesAndNics) {
  for (const Case& c : cases()) {
    const Scenario s = small(c.cluster, c.sets, c.moe);
    EXPECT_EQ(symmetric_replicas(s), c.replicas) << c.sets[0] << " " << c.sets[2];
  }
}

// Every GPU's compute and data-parallel streams run the same tasks at the same instants
// as the simulated replica it is an image of.
TEST(ReplicaSymmetry, FoldedStepEqualsPerRankStepForEveryGpu) {
  for (const Case& c : cases()) {
    const Scenario s = small(c.cluster, c.sets, c.moe);
    const std::string what = c.sets[0] + " " + c.sets[1] + " " + c.sets[2];
    const StepCosts costs = price_step(s);
    const StepGraph folded = build_step_graph(s, costs, Fidelity::full);
    const StepGraph every = build_step_graph(s, costs, Fidelity::full_per_rank);
    const engine::Timeline a = engine::simulate(folded.graph), b = engine::simulate(every.graph);
    EXPECT_EQ(a.makespan_s, b.makespan_s) << what;
    const int per_replica = s.plan.tp * s.plan.cp;
    // where the shift folds nothing, hybrid folding may: one replica per class, the image of
    // replica d its class's (replica_classes_test.cpp checks those classes)
    const ReplicaFold fold = replica_fold(s, Fidelity::full);
    const int simulated_replicas = fold.hybrid ? fold.classes.classes() : c.replicas;
    EXPECT_TRUE(!fold.hybrid || c.replicas == s.plan.dp) << what;
    EXPECT_EQ(folded.simulated_gpus, s.plan.pp * per_replica * simulated_replicas) << what;
    EXPECT_EQ(every.simulated_gpus, s.plan.world_size()) << what;
    auto image_of = [&](std::size_t g) {
      const int d = static_cast<int>(g) / per_replica, i = static_cast<int>(g) % per_replica;
      return static_cast<std::size_t>(fold.hybrid ? i + per_replica * fold.classes.class_of[d]
                                                  : static_cast<int>(g) % (per_replica * c.replicas));
    };
    for (int stage = 0; stage < s.plan.pp; ++stage)
      for (std::size_t g = 0; g < every.ranks[stage].size(); ++g) {
        const StageStreams& image = every.ranks[stage][g];
        const StageStreams& simulated = folded.ranks[stage][image_of(g)];
        for (auto stream : {&StageStreams::compute, &StageStreams::dp, &StageStreams::tp}) {
          const auto& x = folded.graph.tasks_on(simulated.*stream);
          const auto& y = every.graph.tasks_on(image.*stream);
          ASSERT_EQ(x.size(), y.size()) << what;
          for (std::size_t k = 0; k < x.size(); ++k) {
            ASSERT_EQ(folded.graph.name(x[k]), every.graph.name(y[k])) << what;
            ASSERT_EQ(a.start_s[x[k]], b.start_s[y[k]]) << what << " rank " << image.rank << " task " << k;
            ASSERT_EQ(a.end_s[x[k]], b.end_s[y[k]]) << what << " rank " << image.rank << " task " << k;
          }
        }
      }
  }
}

// The report a user reads is the same, apart from how many GPUs the engine ran.
TEST(ReplicaSymmetry, ReportsAreIdentical) {
  for (const Case& c : cases()) {
    const Scenario s = small(c.cluster, c.sets, c.moe);
    nlohmann::json folded = time_json(predict_training(s, "", Fidelity::full));
    nlohmann::json every = time_json(predict_training(s, "", Fidelity::full_per_rank));
    EXPECT_LT(folded["simulated_gpus"].get<int>(), every["simulated_gpus"].get<int>() + (c.replicas == s.plan.dp));
    folded.erase("simulated_gpus");
    every.erase("simulated_gpus");
    EXPECT_EQ(folded.dump(), every.dump()) << c.sets[0];
  }
}

// Whether `g` has a shared link `name` (a fair-share uplink) of capacity `slots`.
bool has_shared_link(const StepGraph& g, const std::string& name, int slots) {
  for (engine::ResourceId r = 0; r < g.graph.num_resources(); ++r)
    if (g.graph.resource(r).name == name)
      return g.graph.resource(r).kind == engine::ResourceKind::Shared && g.graph.resource(r).slots == slots;
  return false;
}

// Pipeline sends between two switch domains, 16 one-GPU nodes: stage 0 on nodes 0-7, stage 1
// on nodes 8-15, behind `fabric` + R (an oversubscription of R). Each send holds both ends'
// uplinks (the two of the fabric's uplinks there are), shared links of 8 / R NIC rates, so
// the step slows as they shrink; at R = 1 there is nothing to simulate and the step is the
// plain network's. Every replica sits alike under its leaf: full mode folds them into one
// (sim/training/replica_classes.hpp) whose sends weigh 8 on each uplink, exactly as per rank.
void expect_sends_queue_on(const std::string& fabric, const std::string& link) {
  const std::string nodes = R"(gpu: a100-sxm-80gb, gpus_per_node: 1,
    intra_node: {bandwidth_GBps: 300, latency_us: 2}, inter_node: {bandwidth_GBps: 5, latency_us: 5, nics_per_node: 1})";
  const std::vector<std::string> plan{"plan.tp=1", "plan.pp=2", "plan.dp=8"};
  const double plain = predict_training(small(nodes, plan), "", Fidelity::full).step_s;
  double previous = 0;
  for (int ratio : {1, 2, 4, 8}) {
    const Scenario s = small(nodes + ", fabric: {" + fabric + std::to_string(ratio) + "}", plan);
    const StepGraph g = build_step_graph(s, price_step(s), Fidelity::full);
    const engine::Timeline tl = engine::simulate(g.graph);
    if (ratio == 1) { EXPECT_EQ(tl.makespan_s, plain) << link; }
    EXPECT_GE(tl.makespan_s, previous) << link << " " << ratio;
    previous = tl.makespan_s;
    int uplinks = 0;
    for (engine::ResourceId r = 0; r < g.graph.num_resources(); ++r)
      uplinks += g.graph.resource(r).name.find("uplink") != std::string::npos;
    EXPECT_EQ(uplinks, ratio > 1 ? 2 : 0) << link << " " << ratio;
    if (ratio > 1) {
      EXPECT_TRUE(has_shared_link(g, link, 8 / ratio)) << link << " " << ratio;
      EXPECT_EQ(g.simulated_gpus, 2) << link << " " << ratio;  // one replica per stage stands for 8
      const StepGraph every = build_step_graph(s, price_step(s), Fidelity::full_per_rank);
      EXPECT_EQ(engine::simulate(every.graph).makespan_s, tl.makespan_s) << link << " " << ratio;
    }
  }
  EXPECT_GT(previous, 1.2 * plain) << link;
}

// An oversubscribed spine: the two stages under two leaves of 8 nodes.
TEST(ReplicaSymmetry, OversubscribedSpineQueuesTransfersBetweenLeaves) {
  expect_sends_queue_on("nodes_per_leaf: 8, oversubscription: ", "leaf0.uplink");
}

// An oversubscribed core between pods (a three-tier fabric): the two stages in two pods of 8
// nodes, their leaves (4 nodes) non-blocking.
TEST(ReplicaSymmetry, OversubscribedCoreQueuesTransfersBetweenPods) {
  expect_sends_queue_on("nodes_per_leaf: 4, nodes_per_pod: 8, pod_oversubscription: ", "pod0.core_uplink");
}

TEST(ReplicaSymmetry, PodsAreRefusedWhenTheyCutALeafOrHaveNoSize) {
  EXPECT_THROW(small(kDgx + ", fabric: {nodes_per_leaf: 2, nodes_per_pod: 3}", {"plan.tp=8", "plan.dp=4"}),
               ScenarioError);
  EXPECT_THROW(small(kDgx + ", fabric: {nodes_per_leaf: 2, pod_oversubscription: 2}", {"plan.tp=8", "plan.dp=4"}),
               ScenarioError);
}

// The trace holds the simulated GPUs only and says which GPUs of the plan they stand for.
TEST(ReplicaSymmetry, TraceSaysWhatItCovers) {
  const Scenario s = small(kDgx, {"plan.tp=2", "plan.pp=2", "plan.dp=4"});
  const std::string path = ::testing::TempDir() + "replica_symmetry_trace.json";
  predict_training(s, path, Fidelity::full);
  std::ifstream in(path);
  const nlohmann::json trace = nlohmann::json::parse(in);
  EXPECT_EQ(trace["otherData"]["gpus"], "16");
  EXPECT_EQ(trace["otherData"]["simulated_gpus"], "4");
  EXPECT_NE(trace["otherData"]["covers"].get<std::string>().find("replica 0 of every stage"), std::string::npos);
  std::set<int> ranks;
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == "X" && e["cat"] == "compute") ranks.insert(e["pid"].get<int>());
  EXPECT_EQ(ranks, (std::set<int>{0, 1, 8, 9}));  // replica 0's two GPUs on each stage of 8
}

// Past 1,024 simulated GPUs the trace samples data-parallel replica 0 of every stage and
// says so: 2,048 GPUs simulated per rank, 2 written.
TEST(ReplicaSymmetry, ATraceOfThousandsOfGpusIsSampled) {
  const Scenario s = small(kDgx, {"plan.tp=1", "plan.pp=2", "plan.dp=1024", "training.global_batch=1024"});
  const std::string path = ::testing::TempDir() + "replica_symmetry_sampled.json";
  predict_training(s, path, Fidelity::full_per_rank);
  std::ifstream in(path);
  const nlohmann::json trace = nlohmann::json::parse(in);
  EXPECT_EQ(trace["otherData"]["simulated_gpus"], "2048");
  EXPECT_EQ(trace["otherData"]["covers"].get<std::string>().rfind("sampled: the GPUs of data-parallel replica 0", 0), 0u);
  std::set<int> ranks;
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == "X" && e["cat"] == "compute") ranks.insert(e["pid"].get<int>());
  EXPECT_EQ(ranks, (std::set<int>{0, 1024}));
}

}  // namespace
}  // namespace twinsim
