#pragma once
// The GPUs a step simulation follows, per pipeline stage, and their parallel groups.
// Fast mode keeps one GPU per stage, standing for all its replicas; full mode keeps
// every GPU, numbered in Megatron's order tp-cp-ep-dp-pp (rank_layout.hpp), or, folded by
// symmetry (replica_symmetry.hpp), the first k data-parallel replicas of every stage.
#include <vector>

#include "scenario/scenario.hpp"
#include "sim/engine/task_graph.hpp"
#include "sim/training/rank_layout.hpp"
#include "sim/training/replica_classes.hpp"
#include "sim/training/step_graph.hpp"

namespace twinsim {

enum class GroupKind { tp, cp, ep, dp };

inline ParallelGroup parallel_group(GroupKind kind) {
  switch (kind) {
    case GroupKind::tp: return ParallelGroup::tp;
    case GroupKind::cp: return ParallelGroup::cp;
    case GroupKind::ep: return ParallelGroup::ep;
    case GroupKind::dp: return ParallelGroup::dp;
  }
  return ParallelGroup::dp;
}

// One parallel group: its simulated members, and whether the whole group (simulated
// members or not) spans nodes, in which case its collectives hold the members' NICs.
struct RankGroup {
  std::vector<int> members;  // indices into StageRanks::gpus
  bool spans_nodes = false;
  bool spans_leaves = false;  // and leaf switches (cluster.fabric): it then crosses the spine
  bool spans_pods = false;    // and pods (cluster.fabric.nodes_per_pod): it crosses the core
  bool all_replicas = false;  // a data-parallel group: one task for every replica of the stage
};

struct StageRanks {
  std::vector<StageStreams> gpus;
  std::vector<RankGroup> tp, cp, ep, dp;  // every group of that kind on this stage
  const std::vector<RankGroup>& groups(GroupKind k) const {
    return k == GroupKind::tp ? tp : k == GroupKind::cp ? cp : k == GroupKind::ep ? ep : dp;
  }
};

// The data-parallel replicas full mode simulates: 0 .. k-1 when the shift by k is a
// symmetry (replica_symmetry.hpp), else one per class where hybrid folding applies and
// folds (replica_classes.hpp), else all (as full per rank always).
struct ReplicaFold {
  std::vector<int> simulated;  // DP indices, ascending
  bool hybrid = false;
  ReplicaClasses classes;      // hybrid only
};
ReplicaFold replica_fold(const Scenario& s, Fidelity fidelity);

// Adds the streams (and, across nodes, one NIC link per GPU rail in full mode, one per
// stage in fast mode) to `g`.
std::vector<StageRanks> make_stage_ranks(const Scenario& s, Fidelity fidelity, engine::TaskGraph& g);

// The node a global rank sits on, and the NIC it sends through: rail-optimised nodes
// (DGX) give local GPU j NIC j mod nics_per_node; NICs are numbered node by node.
int node_of(const Scenario& s, int rank);
int nic_of(const Scenario& s, int rank);

// The leaf switch a rank's NIC hangs off (cluster.fabric; -1 without one): rail-optimised,
// one leaf per rail and unit of nodes_per_leaf nodes; single-plane, one per unit.
int leaf_of(const Scenario& s, int rank);
// A leaf's spine uplink's capacity in NIC rates (a shared link, fair among the transfers
// through it): its NIC ports over the oversubscription. 0 when that is all its NICs (the
// uplink never holds anyone back and is not simulated).
int leaf_uplink_slots(const ClusterSpec& c);
// A leaf's NIC ports: nodes_per_leaf, times nics_per_node on a single-plane fabric.
int leaf_uplink_ports(const ClusterSpec& c);
// The pod a rank's node sits in (cluster.fabric.nodes_per_pod; -1 without pods), and how many
// transfers a pod's links to the core carry at once at the NICs' rate: its NIC ports over
// pod_oversubscription; 0 when that is all of them (not simulated).
int pod_of(const Scenario& s, int rank);
int pod_uplink_slots(const ClusterSpec& c);

}  // namespace twinsim
