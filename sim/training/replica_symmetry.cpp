#include "sim/training/replica_symmetry.hpp"

#include <cstdint>
#include <vector>

#include "sim/training/step_ranks.hpp"

namespace twinsim {

namespace {

// A map of nodes (or NICs) built a GPU at a time: each must have one image, and no two the
// same one.
class ConsistentMap {
 public:
  explicit ConsistentMap(std::size_t n) : image_(n, -1), claimed_(n, 0) {}
  bool map(int from, int to) {
    int& image = image_[static_cast<std::size_t>(from)];
    if (image >= 0) return image == to;
    if (claimed_[static_cast<std::size_t>(to)]) return false;
    claimed_[static_cast<std::size_t>(to)] = 1;
    image = to;
    return true;
  }

 private:
  std::vector<int> image_;
  std::vector<std::uint8_t> claimed_;
};

// Whether d -> d + k (mod dp) on every stage maps nodes onto nodes and NICs onto NICs
// (the GPUs of one node, one NIC, land on one node, one NIC, a different one per node), and
// whether the GPUs sharing a NIC all lie in one block of k replicas (d / k alike): the
// simulated replicas 0 .. k-1 then meet on their NICs all the traffic there is, not a part.
// With an oversubscribed fabric, the same for leaf switches and their uplinks, and for pods
// and their core uplinks.
bool shift_keeps_nodes(const Scenario& s, int k) {
  const Plan& p = s.plan;
  const std::int64_t replica = static_cast<std::int64_t>(p.tp) * p.cp;  // ranks per DP index
  const std::int64_t stage = replica * p.dp;
  const std::int64_t world = stage * p.pp;
  const int nodes = node_of(s, static_cast<int>(world - 1)) + 1;
  ConsistentMap node_image(static_cast<std::size_t>(nodes));
  const std::size_t nics = static_cast<std::size_t>(nodes) * static_cast<std::size_t>(s.cluster.nics_per_node);
  ConsistentMap nic_image(nics);
  std::vector<std::int64_t> nic_block(nics, -1);
  // an oversubscribed fabric's leaf uplinks are shared links too: the same rules
  const bool uplinks = leaf_uplink_slots(s.cluster) > 0;
  const std::size_t leaves = uplinks ? static_cast<std::size_t>(leaf_of(s, static_cast<int>(world - 1))) + nics : 0;
  ConsistentMap leaf_image(leaves);
  std::vector<std::int64_t> leaf_block(leaves, -1);
  const bool pod_uplinks = pod_uplink_slots(s.cluster) > 0;
  const std::size_t pods = pod_uplinks ? static_cast<std::size_t>(pod_of(s, static_cast<int>(world - 1))) + 1 : 0;
  ConsistentMap pod_image(pods);
  std::vector<std::int64_t> pod_block(pods, -1);
  auto same_block = [](std::int64_t& block, std::int64_t b) {
    if (block < 0) block = b;
    return block == b;
  };
  for (std::int64_t r = 0; r < world; ++r) {
    const std::int64_t in_stage = r % stage;
    const std::int64_t d = in_stage / replica;
    const std::int64_t image = r - in_stage + in_stage % replica + ((d + k) % p.dp) * replica;
    const int from = static_cast<int>(r), to = static_cast<int>(image);
    if (!node_image.map(node_of(s, from), node_of(s, to)) || !nic_image.map(nic_of(s, from), nic_of(s, to))) return false;
    if (!same_block(nic_block[static_cast<std::size_t>(nic_of(s, from))], d / k)) return false;
    if (uplinks && (!leaf_image.map(leaf_of(s, from), leaf_of(s, to)) ||
                    !same_block(leaf_block[static_cast<std::size_t>(leaf_of(s, from))], d / k)))
      return false;
    if (pod_uplinks && (!pod_image.map(pod_of(s, from), pod_of(s, to)) ||
                        !same_block(pod_block[static_cast<std::size_t>(pod_of(s, from))], d / k)))
      return false;
  }
  return true;
}

// Expert-parallel groups are blocks of expert_tp x ep consecutive stage indices
// (sim/training/step_ranks.cpp): the shift moves indices by tp * cp * k.
bool shift_keeps_expert_groups(const Plan& p, int k) {
  return (static_cast<std::int64_t>(p.tp) * p.cp * k) % (static_cast<std::int64_t>(p.etp()) * p.ep) == 0;
}

}  // namespace

int symmetric_replicas(const Scenario& s) {
  const int dp = s.plan.dp;
  for (int k = 1; k < dp; ++k)
    if (dp % k == 0 && shift_keeps_expert_groups(s.plan, k) && shift_keeps_nodes(s, k)) return k;
  return dp;
}

}  // namespace twinsim
