#include "sim/cost/collective_cost.hpp"

#include <algorithm>
#include <iterator>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "hardware/curve.hpp"

namespace twinsim {

namespace {

// NCCL's protocols as NCCL's own tuner models them (NVIDIA/nccl src/graph/tuning.cc,
// commit 01afd20a):
// - bandwidth: LL sends 8-byte lines of 4 data bytes plus a flag, which NCCL rates at
//   1/4 of the bus bandwidth for a ring all-reduce; LL128 carries 120 of every 128
//   bytes (x 0.92); Simple carries everything.
// - base latency: `baseLat`, ring row: 3.6, 10.0, 8.4 us.
// - per message step: `hwLat`, ring row: NVLink 0.47, 1.9, 3.4 us and network 2.7, 4.0,
//   9.6 us; kept here relative to Simple, whose step is the link's own `latency_s`.
struct ProtocolSpec {
  Protocol protocol;
  double bandwidth_fraction;
  double base_latency_s;
  double nvlink_step_scale;
  double network_step_scale;
};
constexpr ProtocolSpec kProtocols[] = {
    {Protocol::ll, 0.25, 3.6e-6, 0.47 / 3.4, 2.7 / 9.6},
    {Protocol::ll128, 0.92, 10.0e-6, 1.9 / 3.4, 4.0 / 9.6},
    {Protocol::simple, 1.0, 8.4e-6, 1.0, 1.0},
};

// Achieved fraction of line rate for large messages when a link gives no curve.
// NVLink: NCCL reaches 370 of H100's 450 GB/s, "protocol overhead (~20%)" (S. Jeaugey,
// NVIDIA/nccl-tests issue #212). InfiniBand HDR: 24 of 25 GB/s per NIC (S. Jeaugey,
// NVIDIA/nccl issue #412).
const std::vector<EfficiencyPoint> kNvlinkDefault{{1.0, 0.80}};
const std::vector<EfficiencyPoint> kNetworkDefault{{1.0, 0.96}};

// NCCL's tree moves the whole buffer up and then down the tree at 0.9 of the bus
// bandwidth: algbw = 0.5 x 0.9 x busBw (tuning.cc, "Convert bus BW to algorithm BW").
constexpr double kTreeBusFraction = 0.9;

// What one rank of a group gets from each link class at a given message size.
struct Links {
  double nvlink_Bps = 0;        // per rank, one direction
  double network_Bps = 0;       // per rank: its node's NICs shared by all GPUs of the node
  double nvlink_step_s = 0;     // Simple protocol, per message step
  double network_step_s = 0;
};

double achieved_Bps(const LinkSpec& link, double line_Bps, const std::vector<EfficiencyPoint>& fallback,
                    CollectiveOp c, double bytes) {
  const auto own = link.efficiency_by_op.find(to_string(c));
  const std::vector<EfficiencyPoint>& curve = own != link.efficiency_by_op.end() ? own->second
                                              : link.efficiency.empty()          ? fallback
                                                                                 : link.efficiency;
  return line_Bps * interpolate_efficiency(curve, bytes);
}

Links group_links(const ClusterSpec& cluster, CollectiveOp c, double bytes) {
  Links l;
  l.nvlink_Bps = achieved_Bps(cluster.intra_node, cluster.intra_node.bandwidth_Bps, kNvlinkDefault, c, bytes);
  l.network_Bps =
      achieved_Bps(cluster.inter_node, cluster.inter_node_bandwidth_per_gpu_Bps(), kNetworkDefault, c, bytes);
  l.nvlink_step_s = cluster.intra_node.latency_s;
  l.network_step_s = cluster.inter_node.latency_s;
  return l;
}

// The bus bandwidth of a ring or tree: every edge carries the same bytes, so the slowest
// link class sets the pace. Between nodes the group's ranks on a node share that node's
// NICs (r of them, each with its per-GPU share), as NCCL spreads rings over the NICs.
double bus_Bps(const Links& l, const GroupLayout& g) {
  if (g.nodes() == 1) return l.nvlink_Bps;
  const double nic_share = g.ranks_per_node * l.network_Bps;
  return g.ranks_per_node > 1 ? std::min(l.nvlink_Bps, nic_share) : nic_share;
}

struct Steps {
  int nvlink = 0;
  int network = 0;
};

int ceil_log2(int x) {
  int bits = 0;
  while ((1 << bits) < x) ++bits;
  return bits;
}

// Ring: n-1 steps per pass, two passes for all-reduce (reduce-scatter then all-gather);
// one step per pass crosses each node boundary (NCCL tuning.cc, nsteps / nInterSteps).
Steps ring_steps(CollectiveOp c, const GroupLayout& g) {
  const int passes = c == CollectiveOp::all_reduce ? 2 : 1;
  const int total = passes * (g.ranks - 1);
  const int network = passes * (g.nodes() - 1);
  return {total - network, network};
}

// Tree: a chain inside each node and a binary tree across nodes, up then down
// (NCCL tuning.cc, tree latency: 2 x ((ppn-1) x intraLat + log2(nNodes) x interLat)).
Steps tree_steps(const GroupLayout& g) { return {2 * (g.ranks_per_node - 1), 2 * ceil_log2(g.nodes())}; }

// Point-to-point: all peers at once, one step over each link class used.
Steps direct_steps(const GroupLayout& g) { return {g.ranks_per_node > 1 ? 1 : 0, g.nodes() > 1 ? 1 : 0}; }

double steps_latency_s(const ProtocolSpec& p, const Steps& s, const Links& l) {
  return p.base_latency_s + s.nvlink * l.nvlink_step_s * p.nvlink_step_scale +
         s.network * l.network_step_s * p.network_step_scale;
}

// Bandwidth term of each algorithm at full protocol efficiency.
double ring_bandwidth_s(CollectiveOp c, const GroupLayout& g, const Links& l, double bytes) {
  // each rank sends bus_bandwidth_factor x S: the nccl-tests busbw derivation
  return bus_bandwidth_factor(c, g.ranks) * bytes / bus_Bps(l, g);
}

// All-reduce's tree across nodes: the node's share of the buffer is reduced and broadcast
// inside the node while the nodes exchange theirs, the two pipelined, so the slower sets the
// pace (NCCL's NVLS tree on NVSwitch nodes, the chain-and-tree elsewhere).
// - Between nodes each node sends and receives the whole buffer twice (NCCL's double
//   binary tree: an interior node gets both halves up from its children and down from its
//   parents), but once with two nodes, each the other's only peer: NCCL's tuner rates the
//   two-node tree at the intra-node bandwidth and doubles the two-node NVLS tree's
//   inter-node bandwidth (tuning.cc, commit 5067397c: `bw = nNodes <= 2 ? bwIntra : bwInter`,
//   "Handle 2 node case of NVLSTree"). nccl-tests between two nodes agree: busbw 1.57x what
//   a ring can reach on 2 x p4de and 1.22x on 2 x p5 (tests/unit/validation/nccl_multinode_test.cpp).
// - Inside the node: the node's measured all-reduce where it has one (its largest size's
//   bus bandwidth: NVLS on an NVSwitch node, 476 GB/s on the DGX H100 against 360 for a
//   ring over NVLink), else the buffer up and down the chain at 0.9 of NVLink.
// Inside one node the tree is a chain: the buffer up and down at 0.9 of NVLink.
double tree_bandwidth_s(const ClusterSpec& cluster, const GroupLayout& g, const Links& l, double bytes) {
  if (g.nodes() == 1) return 2.0 * bytes / (kTreeBusFraction * l.nvlink_Bps);
  const double node_network_Bps = g.ranks_per_node * l.network_Bps;
  const double exchanges = g.nodes() == 2 ? 1.0 : 2.0;
  const double inter_s = exchanges * bytes / (kTreeBusFraction * node_network_Bps);
  if (g.ranks_per_node == 1) return inter_s;
  double intra_s = 2.0 * bytes / (kTreeBusFraction * l.nvlink_Bps);
  const auto measured = cluster.intra_node.measured_busbw.find(to_string(CollectiveOp::all_reduce));
  if (measured != cluster.intra_node.measured_busbw.end() && !measured->second.empty()) {
    // the curve of the node's group size, or of the largest measured group below it
    const auto curve = measured->second.upper_bound(g.ranks_per_node);
    const auto& points = (curve == measured->second.begin() ? curve : std::prev(curve))->second;
    intra_s = bus_bandwidth_factor(CollectiveOp::all_reduce, g.ranks_per_node) * bytes / points.back().y;
  }
  return std::max(inter_s, intra_s);
}

double direct_bandwidth_s(CollectiveOp c, const GroupLayout& g, const Links& l, double bytes) {
  const double n = g.ranks, r = g.ranks_per_node;
  if (c == CollectiveOp::send_recv) return bytes / (g.ranks_per_node > 1 ? l.nvlink_Bps : l.network_Bps);
  // all_to_all: 1/n of S to every other rank; NVLink and NICs work at the same time, and
  // a rank's remote share leaves through its own NIC share only: all-to-all "cannot
  // aggregate the bandwidth of multiple NICs" (S. Jeaugey, NVIDIA/nccl-tests issue #267).
  const double nvlink_s = r > 1 ? bytes * (r - 1) / n / l.nvlink_Bps : 0;
  const double network_s = n > r ? bytes * (n - r) / n / l.network_Bps : 0;
  return std::max(nvlink_s, network_s);
}

void check_group(const ClusterSpec& cluster, const GroupLayout& g) {
  if (g.ranks < 1 || g.ranks_per_node < 1 || g.ranks_per_node > cluster.gpus_per_node)
    throw std::invalid_argument("collective group of " + std::to_string(g.ranks) + " ranks with " +
                                std::to_string(g.ranks_per_node) + " per node does not fit nodes of " +
                                std::to_string(cluster.gpus_per_node) + " GPUs");
  if (g.nodes() > 1 && cluster.inter_node.bandwidth_Bps <= 0)
    throw std::invalid_argument("collective spans " + std::to_string(g.nodes()) +
                                " nodes but cluster " + cluster.name + " has no inter-node bandwidth");
}

// Time of one call from a measured busbw curve (bytes -> bytes/s): inside the measured
// sizes busbw interpolates linearly in log(bytes); below them the smallest size's time
// holds (a call's fixed latency does not shrink with its payload), above them the largest
// size's busbw. Sets `extrapolated` outside the measured sizes.
double curve_time_s(const std::vector<CurvePoint>& curve, double factor, double bytes, bool& extrapolated) {
  const CurvePoint& first = curve.front();
  if (bytes < first.x) {
    extrapolated = true;
    return factor * first.x / first.y;
  }
  if (bytes > curve.back().x) extrapolated = true;
  return factor * bytes / interpolate_curve(curve, bytes);
}

// Below a group size's smallest measured size: the factor by which the time falls from that
// size down to `bytes` on the nearest group size of the same collective measured that small
// (the small-message protocols cost alike whatever the group: the DGX A100's 2- and 4-GPU
// all-reduce, measured by vTrain from 1 MiB, follow its 8-GPU one, measured down to 32 KiB
// by S. Bekman's nccl-tests, 43.8 us there against 101.9 us at 1 MiB), down to that group's
// own smallest size, whose ratio holds below it. 1 when none was measured smaller: the
// smallest size's time holds.
double below_range_scale(const std::map<int, std::vector<CurvePoint>>& by_ranks, CollectiveOp c, int ranks,
                         double smallest, double bytes) {
  const std::pair<const int, std::vector<CurvePoint>>* nearest = nullptr;
  for (const auto& entry : by_ranks)
    if (entry.first != ranks && !entry.second.empty() && entry.second.front().x < smallest &&
        (nearest == nullptr || std::abs(entry.first - ranks) < std::abs(nearest->first - ranks)))
      nearest = &entry;
  if (nearest == nullptr) return 1.0;
  bool unused = false;
  const double factor = bus_bandwidth_factor(c, nearest->first);
  const double from = std::max(bytes, nearest->second.front().x);
  return std::min(1.0, curve_time_s(nearest->second, factor, from, unused) /
                           curve_time_s(nearest->second, factor, smallest, unused));
}

// The measured time of `c` over a group of one node (nccl-tests busbw: time = bytes x bus
// factor / busbw, with the group's own bus factor). A group size between two measured ones
// interpolates the two times linearly in the group size; outside them the nearest measured
// curve serves (flagged extrapolated), busbw being what nccl-tests makes comparable across
// group sizes. nullopt when the link has no curve for this collective.
std::optional<CollectiveCost> measured_collective(const LinkSpec& link, CollectiveOp c, int ranks, double bytes) {
  const auto table = link.measured_busbw.find(to_string(c));
  if (table == link.measured_busbw.end() || table->second.empty()) return std::nullopt;
  const auto& by_ranks = table->second;
  CollectiveCost cost;
  cost.measured = true;
  const double factor = bus_bandwidth_factor(c, ranks);
  auto time_at = [&](const auto& entry) {
    const double t = curve_time_s(entry.second, factor, bytes, cost.extrapolated);
    const double smallest = entry.second.front().x;
    return bytes < smallest ? t * below_range_scale(by_ranks, c, entry.first, smallest, bytes) : t;
  };
  const auto above = by_ranks.lower_bound(ranks);
  if (above != by_ranks.end() && above->first == ranks) {
    cost.bandwidth_s = time_at(*above);
  } else if (above == by_ranks.begin() || above == by_ranks.end()) {
    cost.extrapolated = true;
    cost.bandwidth_s = time_at(above == by_ranks.end() ? *by_ranks.rbegin() : *above);
  } else {
    const auto below = std::prev(above);
    const double w = static_cast<double>(ranks - below->first) / (above->first - below->first);
    cost.bandwidth_s = (1 - w) * time_at(*below) + w * time_at(*above);
  }
  return cost;
}

}  // namespace

std::string_view to_string(CollectiveOp c) {
  switch (c) {
    case CollectiveOp::all_reduce: return "all_reduce";
    case CollectiveOp::all_gather: return "all_gather";
    case CollectiveOp::reduce_scatter: return "reduce_scatter";
    case CollectiveOp::all_to_all: return "all_to_all";
    case CollectiveOp::broadcast: return "broadcast";
    case CollectiveOp::send_recv: return "send_recv";
  }
  return "?";
}

std::string_view to_string(Algorithm a) {
  switch (a) {
    case Algorithm::ring: return "ring";
    case Algorithm::tree: return "tree";
    case Algorithm::direct: return "direct";
  }
  return "?";
}

std::string_view to_string(Protocol p) {
  switch (p) {
    case Protocol::ll: return "LL";
    case Protocol::ll128: return "LL128";
    case Protocol::simple: return "Simple";
  }
  return "?";
}

bool parse_collective(std::string_view name, CollectiveOp& out) {
  std::string key;
  for (char ch : name)
    if (ch != '_' && ch != '-') key += ch;
  for (CollectiveOp c : {CollectiveOp::all_reduce, CollectiveOp::all_gather, CollectiveOp::reduce_scatter,
                       CollectiveOp::all_to_all, CollectiveOp::broadcast, CollectiveOp::send_recv}) {
    std::string candidate;
    for (char ch : to_string(c))
      if (ch != '_') candidate += ch;
    if (key == candidate) {
      out = c;
      return true;
    }
  }
  return false;
}

GroupLayout packed_group(const ClusterSpec& cluster, int ranks) {
  return {ranks, std::max(1, std::min(ranks, cluster.gpus_per_node))};
}

double bus_bandwidth_factor(CollectiveOp c, int ranks) {
  const double n = ranks;
  switch (c) {
    case CollectiveOp::all_reduce: return 2.0 * (n - 1) / n;
    case CollectiveOp::all_gather:
    case CollectiveOp::reduce_scatter:
    case CollectiveOp::all_to_all: return (n - 1) / n;
    case CollectiveOp::broadcast:
    case CollectiveOp::send_recv: return 1.0;
  }
  return 1.0;
}

CollectiveCost collective_cost(const ClusterSpec& cluster, CollectiveOp c, const GroupLayout& group, double bytes) {
  check_group(cluster, group);
  CollectiveCost best;
  if (group.ranks == 1) return best;  // nothing to exchange
  if (group.nodes() == 1)
    if (auto measured = measured_collective(cluster.intra_node, c, group.ranks, bytes)) return *measured;
  const Links links = group_links(cluster, c, bytes);
  const bool point_to_point = c == CollectiveOp::all_to_all || c == CollectiveOp::send_recv;

  double best_time = std::numeric_limits<double>::infinity();
  auto consider = [&](Algorithm a, const ProtocolSpec& p, const Steps& steps, double full_rate_s) {
    CollectiveCost cost;
    cost.algorithm = a;
    cost.protocol = p.protocol;
    cost.latency_s = cluster.gpu.kernel_launch_s + steps_latency_s(p, steps, links);
    cost.bandwidth_s = full_rate_s / p.bandwidth_fraction;
    if (cost.time_s() < best_time) {
      best_time = cost.time_s();
      best = cost;
    }
  };
  for (const ProtocolSpec& p : kProtocols) {
    if (point_to_point) {
      consider(Algorithm::direct, p, direct_steps(group), direct_bandwidth_s(c, group, links, bytes));
      continue;
    }
    consider(Algorithm::ring, p, ring_steps(c, group), ring_bandwidth_s(c, group, links, bytes));
    // NCCL offers the tree for all-reduce only (tuning.cc: other collectives are ring-only)
    if (c == CollectiveOp::all_reduce)
      consider(Algorithm::tree, p, tree_steps(group), tree_bandwidth_s(cluster, group, links, bytes));
  }
  return best;
}

double nccl_compute_slowdown(const ClusterSpec& cluster) {
  const int sms = cluster.gpu.sms;
  if (cluster.nccl_channels <= 0 || sms <= cluster.nccl_channels) return 1.0;
  return static_cast<double>(sms) / (sms - cluster.nccl_channels);
}

double interfered_s(double work_s, double comm_s, double slowdown) {
  // comm_s of slowed progress, then the rest at full speed; all slowed if it ends first
  return std::min(work_s * slowdown, work_s + comm_s * (1.0 - 1.0 / slowdown));
}

}  // namespace twinsim
