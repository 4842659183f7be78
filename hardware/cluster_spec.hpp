#pragma once
// A GPU cluster: nodes of identical GPUs, a fast network inside a node (NVLink) and
// a slower one between nodes (InfiniBand / RoCE NICs).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "hardware/curve.hpp"
#include "hardware/gpu_spec.hpp"

namespace twinsim {

struct LinkSpec {
  double bandwidth_Bps = 0;  // one direction
  double latency_s = 0;
  // achieved fraction of bandwidth by message bytes (protocol and chunking effects);
  // empty = the cost model's default curve
  std::vector<EfficiencyPoint> efficiency;
  // the same, for one collective ("all_reduce", "all_gather", "reduce_scatter",
  // "all_to_all", "broadcast", "send_recv") where it differs from the rest: NCCL's ring
  // collectives stream alike, but an MPI library's reduce-scatter can run 10x below its
  // all-gather (measured by `twinsim calibrate` on the host)
  std::map<std::string, std::vector<EfficiencyPoint>, std::less<>> efficiency_by_op;
  // Measured nccl-tests bus bandwidth of a collective ("all_reduce", ...) by group size,
  // each curve by message bytes (CurvePoint{bytes, busbw in bytes/s}). Where a group
  // lies within this link's domain (one node) and its collective is measured, its time is
  // the measurement's: bytes x bus factor / busbw, the call's own latency included
  // (sim/cost/collective_cost.cpp, measured_collective). Empty: the protocol model.
  std::map<std::string, std::map<int, std::vector<CurvePoint>>, std::less<>> measured_busbw;
};

// The host side of a node as one GPU sees it: what offloading to CPU memory runs on
// (ZeRO-Offload). All 0 when a node type does not describe it; offloading is then refused.
struct HostSpec {
  double h2d_Bps = 0;               // host -> this GPU over its PCIe link (pinned memory)
  double d2h_Bps = 0;               // this GPU -> host
  double memory_bandwidth_Bps = 0;  // CPU DRAM bandwidth: this GPU's share of the node's
  std::int64_t memory_bytes = 0;    // CPU DRAM: this GPU's share of the node's
  // The node's NVMe drives (plan.offload_device: nvme), this GPU's share: every GPU of the
  // node swaps at once (ZeRO-Infinity's bandwidth-centric partitioning, Rajbhandari et al.
  // 2021 §6.1), so each gets 1/gpus_per_node of the drives' measured rate
  double nvme_read_Bps = 0;
  double nvme_write_Bps = 0;
  std::int64_t nvme_bytes = 0;  // 0: capacity not described (not checked)
  // The host CPU's Adam update of an offloaded shard (plan.offload_optimizer), seconds per
  // parameter of one GPU's shard with every GPU of the node updating at once; 0: not
  // measured (the update is priced at its DRAM bytes alone). `twinsim calibrate` measures
  // it on the executor's CPU AdamW (calibrate/host_path.hpp).
  double adam_s_per_param = 0;
  // The host CPU's time for a serving engine's host work (its Python scheduler and input
  // preparation, PyTorch's dispatch, the kernel launches, the request path) relative to the
  // x86 servers the stacks' host figures were measured on: StackSpec::serving_host_s and
  // serving_request_s (and its per-token serving_request_token_s) are multiplied by it. 1: an
  // x86 host of that class.
  double cpu_time_scale = 1;
  bool described() const { return h2d_Bps > 0 && d2h_Bps > 0 && memory_bandwidth_Bps > 0 && memory_bytes > 0; }
  bool nvme_described() const { return nvme_read_Bps > 0 && nvme_write_Bps > 0; }
};

// The switch fabric between nodes, as full-fidelity mode sees it: leaf switches each
// serving `nodes_per_leaf` nodes (a DGX SuperPOD scalable unit), connected through spine
// switches whose uplinks carry 1/oversubscription of what the leaf's NICs can send. A
// rail-optimised fabric gives every NIC index (rail) its own leaf per unit: traffic
// between NICs of one rail and one unit stays on the leaf; across units or rails it
// crosses the spine. A single-plane fabric puts all of a unit's NICs on one leaf.
// nodes_per_leaf 0 (default): no leaves modelled, every NIC reaches every other at its
// full rate (a non-blocking fabric).
// A three-tier fabric groups whole leaves into pods of `nodes_per_pod` nodes (a DGX
// SuperPOD of several scalable units) whose spines reach the other pods through core
// switches; the links from a pod's spines to the core carry 1/pod_oversubscription of what
// the pod's NICs can send. nodes_per_pod 0 (default): one pod, two tiers.
struct FabricSpec {
  int nodes_per_leaf = 0;
  double oversubscription = 1.0;  // leaf downlink : uplink bandwidth, >= 1
  bool rail_optimized = true;
  int nodes_per_pod = 0;             // a multiple of nodes_per_leaf; 0: one pod
  double pod_oversubscription = 1.0;  // a pod's NICs : its core uplinks, >= 1
  bool described() const { return nodes_per_leaf > 0; }
  bool has_pods() const { return nodes_per_pod > 0; }
};

// A CPU host whose ranks share the machine's cores (`twinsim calibrate`, calibrate/
// core_sharing.hpp): its gpu figures were timed with `busy_ranks` processes running, one
// per core, and a rank alone on the machine runs its GEMMs and memory-bound kernels
// faster by these measured ratios (a busy SMT sibling or neighbour takes a share of the
// core's units, caches and DRAM bandwidth). busy_ranks 0: not described (GPUs).
struct CoreSharingSpec {
  int busy_ranks = 0;
  double alone_gemm_speedup = 1;
  double alone_memory_speedup = 1;
};

struct ClusterSpec {
  std::string name;           // node type (catalog name), or "custom"
  GpuSpec gpu;
  int gpus_per_node = 8;
  int nodes = 1;              // after loading: as many as the plan needs unless given
  LinkSpec intra_node;        // per GPU, one direction (NVLink)
  LinkSpec inter_node;        // per NIC, one direction
  int nics_per_node = 1;
  // How far the slowest GPU of a synchronising group runs behind the group's mean, as a
  // fraction of the compute since the group last synchronised: each blocking collective
  // waits that long for it. 0 (default): identical GPUs. A shared CPU host's cores are
  // not (`twinsim calibrate` measures it: two ranks running the same work).
  double straggler = 0;
  // Per-GPU speeds spread normally with this relative standard deviation (0: identical):
  // once the plan is known the loader sets `straggler` to the slowest synchronising GPU's
  // lag (hardware/clock_spread.hpp) over the training job's GPUs or one serving replica's.
  double clock_spread = 0;
  // Thread blocks an NCCL kernel holds, one SM each, for as long as it runs (its
  // channels): compute overlapped with a collective runs on the GPU's other SMs.
  // 0 (default): not modelled.
  int nccl_channels = 0;
  HostSpec host;
  FabricSpec fabric;
  CoreSharingSpec core_sharing;

  std::int64_t gpus() const { return static_cast<std::int64_t>(gpus_per_node) * nodes; }
  // Inter-node bandwidth one GPU gets when all GPUs of a node send at once.
  double inter_node_bandwidth_per_gpu_Bps() const {
    return inter_node.bandwidth_Bps * nics_per_node / gpus_per_node;
  }
};

}  // namespace twinsim
