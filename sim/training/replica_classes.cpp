#include "sim/training/replica_classes.hpp"

#include <algorithm>
#include <cstdint>
#include <map>

#include "sim/training/step_ranks.hpp"

namespace twinsim {

namespace {

// Gives each distinct signature a colour, in order of first appearance.
class Palette {
 public:
  int colour(const std::vector<int>& signature) {
    return ids_.emplace(signature, static_cast<int>(ids_.size())).first->second;
  }
  int size() const { return static_cast<int>(ids_.size()); }

 private:
  std::map<std::vector<int>, int> ids_;
};

// The plan's GPUs as (stage, replica, index in replica), and where each sits.
struct Layout {
  int stages = 0, replicas = 0, per_replica = 0;
  std::vector<int> leaf, pod;  // per global rank
  int leaves = 0, pods = 0;
  int rank(int stage, int replica, int i) const { return (stage * replicas + replica) * per_replica + i; }
};

Layout layout(const Scenario& s) {
  Layout l;
  l.stages = s.plan.pp, l.replicas = s.plan.dp, l.per_replica = s.plan.tp * s.plan.cp;
  const int world = static_cast<int>(s.plan.world_size());
  for (int r = 0; r < world; ++r) {
    l.leaf.push_back(std::max(0, leaf_of(s, r)));
    l.pod.push_back(std::max(0, pod_of(s, r)));
    l.leaves = std::max(l.leaves, l.leaf.back() + 1);
    l.pods = std::max(l.pods, l.pod.back() + 1);
  }
  return l;
}

// Gives each switch the colour of (its colour, the multiset of its users' codes).
int recolour(std::vector<int>& colours, std::vector<std::vector<std::int64_t>>& users) {
  std::map<std::vector<std::int64_t>, int> ids;
  for (std::size_t k = 0; k < colours.size(); ++k) {
    std::vector<std::int64_t>& signature = users[k];
    std::sort(signature.begin(), signature.end());
    signature.insert(signature.begin(), colours[k]);
    colours[k] = ids.emplace(std::move(signature), static_cast<int>(ids.size())).first->second;
  }
  return static_cast<int>(ids.size());
}

// One round of refinement: switches by their users (stage, replica colour and, for a leaf,
// the GPU's index in its replica, which names its rail), then replicas by their switches.
// Returns the number of colours after it.
int refine(const Layout& l, std::vector<int>& replica, std::vector<int>& leaf, std::vector<int>& pod) {
  std::vector<std::vector<std::int64_t>> leaf_users(leaf.size()), pod_users(pod.size());
  for (int s = 0; s < l.stages; ++s)
    for (int d = 0; d < l.replicas; ++d)
      for (int i = 0; i < l.per_replica; ++i) {
        const int r = l.rank(s, d, i);
        const std::int64_t user = static_cast<std::int64_t>(s) * l.replicas + replica[d];
        leaf_users[l.leaf[r]].push_back(user * l.per_replica + i);
        pod_users[l.pod[r]].push_back(user);
      }
  const int colours = recolour(leaf, leaf_users) + recolour(pod, pod_users);
  Palette palette;
  std::vector<int> signature;
  for (int d = 0; d < l.replicas; ++d) {
    signature.assign(1, replica[d]);
    for (int s = 0; s < l.stages; ++s)
      for (int i = 0; i < l.per_replica; ++i) {
        const int r = l.rank(s, d, i);
        signature.insert(signature.end(), {leaf[l.leaf[r]], pod[l.pod[r]]});
        // whether its pipeline neighbour shares the leaf (pod): the transfer then skips the uplink
        if (s + 1 < l.stages) {
          const int next = l.rank(s + 1, d, i);
          signature.insert(signature.end(), {l.leaf[r] == l.leaf[next], l.pod[r] == l.pod[next]});
        }
      }
    replica[d] = palette.colour(signature);
  }
  return colours + palette.size();
}

}  // namespace

bool hybrid_folding_applies(const Scenario& s) {
  const Plan& p = s.plan;
  const int per_replica = p.tp * p.cp;
  const bool uplinks = leaf_uplink_slots(s.cluster) > 0 || pod_uplink_slots(s.cluster) > 0;
  // a NIC serves one replica: replicas of whole nodes, or a NIC per GPU (a node then holds
  // several replicas, each on its own NICs)
  const bool own_nics = per_replica % s.cluster.gpus_per_node == 0 || s.cluster.nics_per_node >= s.cluster.gpus_per_node;
  return uplinks && s.cluster.nodes > 1 && own_nics && per_replica % (p.etp() * p.ep) == 0;
}

ReplicaClasses replica_classes(const Scenario& s) {
  const Layout l = layout(s);
  std::vector<int> replica(static_cast<std::size_t>(l.replicas), 0), leaf(static_cast<std::size_t>(l.leaves), 0),
      pod(static_cast<std::size_t>(l.pods), 0);
  // each round keeps or splits colours; stop when a round splits nothing
  for (int before = -1, now = 0; now != before;) before = now, now = refine(l, replica, leaf, pod);
  ReplicaClasses c;
  c.class_of.assign(static_cast<std::size_t>(l.replicas), -1);
  std::map<int, int> class_of_colour;
  for (int d = 0; d < l.replicas; ++d) {
    const auto [it, fresh] = class_of_colour.emplace(replica[d], static_cast<int>(c.representatives.size()));
    if (fresh) c.representatives.push_back(d);
    c.class_of[d] = it->second;
  }
  c.leaf_class = leaf;
  c.pod_class = pod;
  const std::size_t classes = c.representatives.size();
  if (classes == static_cast<std::size_t>(l.replicas)) return c;
  c.stages_ = l.stages, c.leaves_ = l.leaves, c.pods_ = l.pods;
  for (int st = 0; st < l.stages; ++st)
    for (int d = 0; d < l.replicas; ++d) {
      std::vector<int> leaves, pods;  // counted once per replica
      for (int i = 0; i < l.per_replica; ++i) {
        leaves.push_back(l.leaf[l.rank(st, d, i)]);
        pods.push_back(l.pod[l.rank(st, d, i)]);
      }
      for (auto* ids : {&leaves, &pods}) {
        std::sort(ids->begin(), ids->end());
        ids->erase(std::unique(ids->begin(), ids->end()), ids->end());
      }
      const std::int64_t at = static_cast<std::int64_t>(c.class_of[d]) * l.stages + st;
      for (int x : leaves) ++c.on_leaf_[at * l.leaves + x];
      for (int x : pods) ++c.on_pod_[at * l.pods + x];
    }
  return c;
}

int ReplicaClasses::replicas_on_leaf(int cls, int stage, int leaf) const {
  if (leaf < 0) return 1;
  const auto it = on_leaf_.find((static_cast<std::int64_t>(cls) * stages_ + stage) * leaves_ + leaf);
  return it == on_leaf_.end() ? 0 : it->second;
}
int ReplicaClasses::replicas_on_pod(int cls, int stage, int pod) const {
  if (pod < 0) return 1;
  const auto it = on_pod_.find((static_cast<std::int64_t>(cls) * stages_ + stage) * pods_ + pod);
  return it == on_pod_.end() ? 0 : it->second;
}

}  // namespace twinsim
