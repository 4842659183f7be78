#pragma once
// A GPU cluster: nodes of identical GPUs, a fast network inside a node (NVLink) and
// a slower one between nodes (InfiniBand / RoCE NICs).
#include <cstdint>
#include <string>
#include <vector>

#include "hardware/gpu_spec.hpp"

namespace twinsim {

struct LinkSpec {
  double bandwidth_Bps = 0;  // one direction
  double latency_s = 0;
  // achieved fraction of bandwidth by message bytes (protocol and chunking effects);
  // empty = the cost model's default curve
  std::vector<EfficiencyPoint> efficiency;
};

struct ClusterSpec {
  std::string name;           // node type (catalog name), or "custom"
  GpuSpec gpu;
  int gpus_per_node = 8;
  int nodes = 1;              // after loading: as many as the plan needs unless given
  LinkSpec intra_node;        // per GPU, one direction (NVLink)
  LinkSpec inter_node;        // per NIC, one direction
  int nics_per_node = 1;

  std::int64_t gpus() const { return static_cast<std::int64_t>(gpus_per_node) * nodes; }
  // Inter-node bandwidth one GPU gets when all GPUs of a node send at once.
  double inter_node_bandwidth_per_gpu_Bps() const {
    return inter_node.bandwidth_Bps * nics_per_node / gpus_per_node;
  }
};

}  // namespace twinsim
