#include "sim/training/fabric_share.hpp"

#include <algorithm>

#include "sim/training/step_ranks.hpp"

namespace twinsim {

double pipeline_fabric_slowdown(const ClusterSpec& cluster, const Plan& plan) {
  const FabricSpec& f = cluster.fabric;
  if (!f.described()) return 1.0;
  // ranks are tp-cp-ep-dp-pp: pipeline neighbours are a whole stage of ranks apart
  const double stage_nodes = static_cast<double>(plan.tp) * plan.cp * plan.dp / cluster.gpus_per_node;
  double slowdown = 1.0;
  if (const int slots = leaf_uplink_slots(cluster); slots > 0 && stage_nodes >= f.nodes_per_leaf)
    slowdown = static_cast<double>(leaf_uplink_ports(cluster)) / slots;
  if (const int slots = pod_uplink_slots(cluster); slots > 0 && stage_nodes >= f.nodes_per_pod)
    slowdown = std::max(slowdown, static_cast<double>(f.nodes_per_pod) * cluster.nics_per_node / slots);
  return slowdown;
}

}  // namespace twinsim
