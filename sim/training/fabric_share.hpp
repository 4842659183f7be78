#pragma once
// The oversubscribed fabric as fast mode and the search's estimate price it. Full mode
// simulates the leaf and pod uplinks as shared links (sim/engine: each transfer through one
// runs at its fair share); the two cheaper models take that share in the pipeline's steady
// state instead, where every data-parallel replica of a stage sends its activations at
// once: each uplink then carries all its NIC ports' transfers at its capacity, ports /
// capacity times slower than alone. One home for both (issue 59).
#include "hardware/cluster_spec.hpp"
#include "models/plan.hpp"

namespace twinsim {

// How many times slower than alone a pipeline transfer that crosses nodes runs under
// cluster.fabric: the most crowded tier it crosses, leaf uplinks when a stage spans at
// least a leaf's nodes (its neighbour, a stage of ranks away, then sits under another
// leaf), pod uplinks when it spans at least a pod's; 1 on a non-blocking fabric.
double pipeline_fabric_slowdown(const ClusterSpec& cluster, const Plan& plan);

}  // namespace twinsim
