#pragma once
// Time of one NCCL-style collective over a group of GPUs: ring and tree algorithms
// (Thakur, Rabenseifner, Gropp 2005, "Optimization of Collective Communication
// Operations in MPICH", §4), each with a latency term per message step and a bandwidth
// term per link class (NVLink inside a node, NICs between nodes), for each of NCCL's
// protocols (LL, LL128, Simple); like NCCL's tuner, the fastest combination wins.
//
// Sizes follow nccl-tests (doc/PERFORMANCE.md): `bytes` is the whole buffer S of the
// operation (all_reduce: the buffer; all_gather: the gathered output, n x the part each
// rank sends; reduce_scatter: the input, n x each rank's result; all_to_all: what one
// rank sends in total; broadcast and send_recv: the message).
#include <string_view>

#include "hardware/cluster_spec.hpp"

namespace twinsim {

enum class CollectiveOp { all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, send_recv };
enum class Algorithm { ring, tree, direct };   // direct: point-to-point (all_to_all, send_recv)
enum class Protocol { ll, ll128, simple };

std::string_view to_string(CollectiveOp c);
std::string_view to_string(Algorithm a);
std::string_view to_string(Protocol p);
// Accepts nccl-tests style names ("allreduce", "sendrecv") and snake_case ("all_reduce").
bool parse_collective(std::string_view name, CollectiveOp& out);

// The GPUs taking part: how many, and how they sit on nodes (the same count on each).
// A send_recv group is the pair: ranks_per_node 2 inside a node, 1 across nodes.
struct GroupLayout {
  int ranks = 1;
  int ranks_per_node = 1;
  int nodes() const { return (ranks + ranks_per_node - 1) / ranks_per_node; }
};

// `ranks` GPUs packed onto as few nodes of `cluster` as possible.
GroupLayout packed_group(const ClusterSpec& cluster, int ranks);

// nccl-tests bus bandwidth factor: busbw = algbw x factor (doc/PERFORMANCE.md, Summary).
double bus_bandwidth_factor(CollectiveOp c, int ranks);

struct CollectiveCost {
  double latency_s = 0;     // launch plus one fixed cost per message step
  double bandwidth_s = 0;   // bytes on the bottleneck link at its achieved rate
  Algorithm algorithm = Algorithm::ring;
  Protocol protocol = Protocol::simple;
  // the time is the link's measured curve (LinkSpec::measured_busbw), not the protocol
  // model; `extrapolated`: the group size or bytes lay outside what was measured
  bool measured = false;
  bool extrapolated = false;
  double time_s() const { return latency_s + bandwidth_s; }
};

// The fastest algorithm and protocol for this collective; zero time for a group of one.
CollectiveCost collective_cost(const ClusterSpec& cluster, CollectiveOp c, const GroupLayout& group, double bytes);

inline double collective_time_s(const ClusterSpec& cluster, CollectiveOp c, const GroupLayout& group, double bytes) {
  return collective_cost(cluster, c, group, bytes).time_s();
}

// How many times slower compute runs while an NCCL kernel of this cluster runs beside it
// on the same GPU: the kernel's channels hold nccl_channels of the GPU's SMs (one thread
// block each), leaving sms - nccl_channels to the compute (a GEMM launched beside a
// 24-block ncclAllGather on an H100 runs on 108 of 132 SMs: NVIDIA developer forum,
// "Compute-Communication Overlap Causes Severe GEMM Performance Degradation because of
// Tail Effect", 2025). 1 when the cluster gives no nccl_channels.
double nccl_compute_slowdown(const ClusterSpec& cluster);

// Work of `work_s` at full speed that shares its GPU with `comm_s` of collectives starting
// with it, slowed `slowdown` times while they run: the event engine's interference
// (sim/engine, TaskGraph::add_interference) in closed form, for the search's estimate.
double interfered_s(double work_s, double comm_s, double slowdown);

}  // namespace twinsim
