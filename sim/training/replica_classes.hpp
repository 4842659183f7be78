#pragma once
// Hybrid folding: full mode on a fabric the shift of replica_symmetry.hpp cannot fold (an
// oversubscribed spine whose leaves straddle stages, pods that do not hold whole blocks of
// replicas). Its leaf and pod uplinks are shared links (sim/engine: every transfer on one
// runs at its fair share of the uplink), so replicas alike in everything the engine reads
// run alike: the same program, their own NICs, and on every shared uplink the same count of
// each kind of user. Colour refinement finds the coarsest such partition: replicas,
// leaves and pods are coloured; a leaf's colour is refined by the (stage, replica colour,
// GPU index) of its users, a pod's likewise, a replica's by the colours of the leaves and
// pods its GPUs use on every stage, until nothing splits. One replica per class is
// simulated, and on each uplink its transfers count as the class's replicas there (engine
// TaskGraph::set_copies), so every uplink carries the load it carries per rank.
//
// Why that is exact: by induction over the engine's instants, replicas of one class start
// and end their tasks alike, since each task waits only for its own replica's tasks, for
// whole-stage collectives (the same for all), for its own NIC (the replica's nodes are its
// own) and for shared links whose load counts are equal over a class of leaves. Checked
// against full per rank in tests/unit/training/replica_classes_test.cpp.
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "scenario/scenario.hpp"

namespace twinsim {

struct ReplicaClasses {
  std::vector<int> representatives;  // per class, its first DP index (ascending)
  std::vector<int> class_of;         // per DP index
  std::vector<int> leaf_class;       // per leaf switch id (leaf_of): its class
  std::vector<int> pod_class;        // per pod id (pod_of): its class
  // Per class, stage and leaf (pod) id: the class's replicas of that stage with a GPU under
  // that leaf (in that pod); alike over the leaf's class.
  int replicas_on_leaf(int cls, int stage, int leaf) const;
  int replicas_on_pod(int cls, int stage, int pod) const;
  int classes() const { return static_cast<int>(representatives.size()); }

  // the counts that occur, by (class, stage, switch id): at most one per GPU of the plan
  std::unordered_map<std::int64_t, int> on_leaf_, on_pod_;
  std::int64_t stages_ = 0, leaves_ = 0, pods_ = 0;
};

// Whether hybrid folding applies: a simulated leaf or pod uplink, a NIC never serving two
// replicas (replicas of whole nodes, or a NIC per GPU: TP 4 on a DGX's 8 GPUs and 8 NICs),
// expert-parallel groups inside a replica.
bool hybrid_folding_applies(const Scenario& s);
// The classes (call only where it applies); the per-leaf and per-pod counts are filled
// only when they fold (fewer classes than replicas).
ReplicaClasses replica_classes(const Scenario& s);

}  // namespace twinsim
