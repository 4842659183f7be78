#include "sim/training/step_ranks.hpp"

#include <algorithm>
#include <map>

#include "sim/cost/collective_cost.hpp"
#include "sim/training/replica_symmetry.hpp"

namespace twinsim {

int node_of(const Scenario& s, int rank) { return rank / s.cluster.gpus_per_node; }

int nic_of(const Scenario& s, int rank) {
  return node_of(s, rank) * s.cluster.nics_per_node + (rank % s.cluster.gpus_per_node) % s.cluster.nics_per_node;
}

int leaf_of(const Scenario& s, int rank) {
  const FabricSpec& f = s.cluster.fabric;
  if (!f.described()) return -1;
  const int unit = node_of(s, rank) / f.nodes_per_leaf;
  if (!f.rail_optimized) return unit;
  return unit * s.cluster.nics_per_node + nic_of(s, rank) % s.cluster.nics_per_node;
}

int leaf_uplink_slots(const ClusterSpec& c) {
  const FabricSpec& f = c.fabric;
  if (!f.described()) return 0;
  const int ports = f.rail_optimized ? f.nodes_per_leaf : f.nodes_per_leaf * c.nics_per_node;
  const int slots = std::max(1, static_cast<int>(ports / f.oversubscription));
  return slots >= ports ? 0 : slots;
}

int pod_of(const Scenario& s, int rank) {
  const FabricSpec& f = s.cluster.fabric;
  return f.described() && f.has_pods() ? node_of(s, rank) / f.nodes_per_pod : -1;
}

int pod_uplink_slots(const ClusterSpec& c) {
  const FabricSpec& f = c.fabric;
  if (!f.described() || !f.has_pods()) return 0;
  const int ports = f.nodes_per_pod * c.nics_per_node;  // every NIC of the pod, every rail
  const int slots = std::max(1, static_cast<int>(ports / f.pod_oversubscription));
  return slots >= ports ? 0 : slots;
}

namespace {

// The shared links made so far, by NIC, by leaf switch and by pod.
struct Links {
  std::map<int, engine::ResourceId> nics, uplinks, pod_uplinks;
};

// A GPU's streams; its compute slows while its side streams run NCCL kernels
// (nccl_compute_slowdown: the SMs those kernels hold).
StageStreams add_gpu(const Scenario& s, engine::TaskGraph& g, int rank) {
  StageStreams st;
  st.rank = rank;
  st.compute = g.add_stream(rank, "compute");
  st.tp = g.add_stream(rank, "tp_comm");
  st.cp = g.add_stream(rank, "cp_comm");
  st.dp = g.add_stream(rank, "dp_comm");
  st.gather = g.add_stream(rank, "zero3_gather");
  if (s.plan.offload_activations_layers > 0) st.host_link = g.add_stream(rank, "host_link");  // copy engines
  const double slowdown = nccl_compute_slowdown(s.cluster);
  if (slowdown > 1.0) {
    const engine::ResourceId side[] = {st.tp, st.cp, st.dp, st.gather};
    g.add_interference(st.compute, side, slowdown);
  }
  return st;
}

// The GPUs of stage `stage` in DP replicas 0 .. replicas-1, and their groups. Within a
// stage, GPU (t, c, d) has index t + tp * (c + cp * d) and global rank stage * tp*cp*dp +
// index; a group spans nodes when its members over all dp replicas do.
class FullStage {
 public:
  FullStage(const Scenario& s, int stage, int replicas) : s_(s), p_(s.plan), stage_(stage), replicas_(replicas) {}

  StageRanks build(engine::TaskGraph& g, Links& links) const {
    StageRanks sr;
    for (int i = 0; i < p_.tp * p_.cp * replicas_; ++i) sr.gpus.push_back(gpu(g, links, rank(i)));
    for (int d = 0; d < replicas_; ++d)
      for (int c = 0; c < p_.cp; ++c) {
        RankGroup& tp = sr.tp.emplace_back();
        for (int t = 0; t < p_.tp; ++t) tp.members.push_back(index(t, c, d));
        set_spans(tp, tp.members);
      }
    for (int d = 0; d < replicas_; ++d)
      for (int t = 0; t < p_.tp; ++t) {
        RankGroup& cp = sr.cp.emplace_back();
        for (int c = 0; c < p_.cp; ++c) cp.members.push_back(index(t, c, d));
        set_spans(cp, cp.members);
      }
    // the data-parallel group takes each replica's context-parallel ranks too (PlanKnobs::dp_group_size)
    for (int t = 0; t < p_.tp; ++t) {
      RankGroup& dp = sr.dp.emplace_back();
      std::vector<int> all;  // every replica's member, simulated or not
      for (int d = 0; d < p_.dp; ++d)
        for (int c = 0; c < p_.cp; ++c) all.push_back(index(t, c, d));
      for (int d = 0; d < replicas_; ++d)
        for (int c = 0; c < p_.cp; ++c) dp.members.push_back(index(t, c, d));
      set_spans(dp, all);
    }
    // expert-parallel groups, laid over the stage's indices on their own (MoE parallel
    // folding; Megatron-core's expert RankGenerator, tp-ep-dp-pp with expert_tp as its tp):
    // in each block of expert_tp x ep consecutive indices, the ep members with the same expert
    // TP position, expert_tp apart (the symmetry keeps blocks whole: tp * cp * replicas is a
    // multiple of expert_tp * ep; without folding, blocks of ep (cp, dp) positions, same tp)
    const int etp = p_.etp(), block = etp * p_.ep;
    for (int start = 0; start < p_.tp * p_.cp * replicas_; start += block)
      for (int t = 0; t < etp; ++t) {
        RankGroup& ep = sr.ep.emplace_back();
        for (int k = 0; k < p_.ep; ++k) ep.members.push_back(start + t + etp * k);
        set_spans(ep, ep.members);
      }
    return sr;
  }

 private:
  int index(int t, int c, int d) const { return t + p_.tp * (c + p_.cp * d); }
  int rank(int index) const { return stage_ * p_.tp * p_.cp * p_.dp + index; }
  // `indices`: every member of the group over all replicas, simulated or not
  void set_spans(RankGroup& group, const std::vector<int>& indices) const {
    for (int i : indices) {
      group.spans_nodes |= node_of(s_, rank(i)) != node_of(s_, rank(indices.front()));
      group.spans_leaves |= leaf_of(s_, rank(i)) != leaf_of(s_, rank(indices.front()));
      group.spans_pods |= pod_of(s_, rank(i)) != pod_of(s_, rank(indices.front()));
    }
  }

  StageStreams gpu(engine::TaskGraph& g, Links& links, int r) const {
    StageStreams st = add_gpu(s_, g, r);
    if (s_.cluster.nodes == 1) return st;
    const int per_node = s_.cluster.nics_per_node;
    const int nic = nic_of(s_, r);
    st.nic = shared_link(g, links.nics, nic, 1,
                         [&] { return "node" + std::to_string(nic / per_node) + ".nic" + std::to_string(nic % per_node); });
    st.leaf = leaf_of(s_, r);
    if (const int slots = leaf_uplink_slots(s_.cluster); slots > 0)
      st.uplink = shared_link(g, links.uplinks, st.leaf, slots, [&] { return "leaf" + std::to_string(st.leaf) + ".uplink"; });
    st.pod = pod_of(s_, r);
    if (const int slots = pod_uplink_slots(s_.cluster); slots > 0)
      st.pod_uplink =
          shared_link(g, links.pod_uplinks, st.pod, slots, [&] { return "pod" + std::to_string(st.pod) + ".core_uplink"; });
    return st;
  }

  // The link `key` of `made` (a NIC, a leaf's spine uplink, a pod's core uplink), made with
  // its name and slots when the first of the GPUs sharing it is met.
  template <class Name>
  static engine::ResourceId shared_link(engine::TaskGraph& g, std::map<int, engine::ResourceId>& made, int key,
                                        int slots, Name name) {
    auto it = made.find(key);
    if (it == made.end()) it = made.emplace(key, g.add_link(name(), slots)).first;
    return it->second;
  }

  const Scenario& s_;
  const Plan& p_;
  int stage_, replicas_;
};

// Fast mode: the stage's one GPU stands for all; its one NIC carries the stage's
// collectives whose groups the plan puts across nodes and its pipeline transfers that
// cross nodes (sim/training/step_graph.cpp).
StageRanks fast_stage(const Scenario& s, int stage, engine::TaskGraph& g) {
  StageRanks sr;
  sr.gpus.push_back(add_gpu(s, g, stage));
  if (s.cluster.nodes > 1) sr.gpus.back().nic = g.add_link("stage" + std::to_string(stage) + ".nic");
  auto one = [&](ParallelGroup kind) {
    return std::vector<RankGroup>{{{0}, group_layout(s.cluster, s.plan, kind).nodes() > 1}};
  };
  sr.tp = one(ParallelGroup::tp);
  sr.cp = one(ParallelGroup::cp);
  sr.ep = one(ParallelGroup::ep);
  sr.dp = one(ParallelGroup::dp);
  return sr;
}

}  // namespace

std::vector<StageRanks> make_stage_ranks(const Scenario& s, Fidelity fidelity, engine::TaskGraph& g) {
  std::vector<StageRanks> stages;
  Links links;
  const int replicas = fidelity == Fidelity::full ? symmetric_replicas(s) : s.plan.dp;
  for (int i = 0; i < s.plan.pp; ++i)
    stages.push_back(is_full(fidelity) ? FullStage(s, i, replicas).build(g, links) : fast_stage(s, i, g));
  return stages;
}

}  // namespace twinsim
