#include "sim/cost/offload_io.hpp"

#include <algorithm>

namespace twinsim {

namespace {

// a full node's GPUs over those the plan uses on it
double share_scale(const ClusterSpec& cluster, const PlanKnobs& plan) {
  const auto node = static_cast<std::int64_t>(cluster.gpus_per_node);
  return static_cast<double>(node) / static_cast<double>(std::clamp<std::int64_t>(plan.world_size(), 1, node));
}

}  // namespace

double nvme_read_share_Bps(const ClusterSpec& cluster, const PlanKnobs& plan) {
  return cluster.host.nvme_read_Bps * share_scale(cluster, plan);
}

double nvme_write_share_Bps(const ClusterSpec& cluster, const PlanKnobs& plan) {
  return cluster.host.nvme_write_Bps * share_scale(cluster, plan);
}

double host_memory_share_Bps(const ClusterSpec& cluster, const PlanKnobs& plan) {
  return cluster.host.memory_bandwidth_Bps * share_scale(cluster, plan);
}

double offloaded_param_fetch_s(const ClusterSpec& cluster, const PlanKnobs& plan, double bytes) {
  if (!plan.offload_params) return 0;
  const double from_drives = plan.offload_device == OffloadDevice::nvme ? bytes / nvme_read_share_Bps(cluster, plan) : 0.0;
  return from_drives + bytes / cluster.host.h2d_Bps;
}

double offloaded_weight_read_Bps(const ClusterSpec& cluster, const PlanKnobs& plan) {
  if (plan.offload_device != OffloadDevice::nvme) return cluster.host.h2d_Bps;
  return std::min(cluster.host.h2d_Bps, nvme_read_share_Bps(cluster, plan));
}

double nvme_optimizer_swap_s(const ClusterSpec& cluster, const PlanKnobs& plan, double state_bytes, double grad_bytes,
                             double param_bytes) {
  if (!plan.offload_optimizer || plan.offload_device != OffloadDevice::nvme) return 0;
  const double written = state_bytes + (plan.offload_params ? param_bytes : 0.0);
  return (state_bytes + grad_bytes) / nvme_read_share_Bps(cluster, plan) + written / nvme_write_share_Bps(cluster, plan);
}

}  // namespace twinsim
