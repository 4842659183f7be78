#include "sim/training/step_ranks.hpp"

#include <algorithm>
#include <map>

#include "sim/cost/collective_cost.hpp"
#include "sim/training/ep_overlap.hpp"
#include "sim/training/replica_classes.hpp"
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

int leaf_uplink_ports(const ClusterSpec& c) {
  const FabricSpec& f = c.fabric;
  return f.rail_optimized ? f.nodes_per_leaf : f.nodes_per_leaf * c.nics_per_node;
}

int leaf_uplink_slots(const ClusterSpec& c) {
  const FabricSpec& f = c.fabric;
  if (!f.described()) return 0;
  const int ports = leaf_uplink_ports(c);
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
  // combined 1F1B's (ep_overlap.hpp); what it and the compute cost each other is in its exposed
  // share (ep_corun_slowdowns), so it is no interferer here
  if (ep_passes_paired(s.plan)) st.ep = g.add_stream(rank, "ep_comm");
  const double slowdown = nccl_compute_slowdown(s.cluster);
  if (slowdown > 1.0) {
    const engine::ResourceId side[] = {st.tp, st.cp, st.dp, st.gather};
    g.add_interference(st.compute, side, slowdown);
  }
  return st;
}

// The GPUs of stage `stage` in the simulated DP replicas (0 .. k-1 under the shift's
// symmetry; one per class under hybrid folding), and their groups. Within a stage, GPU
// (t, c, d) has index t + tp * (c + cp * d) and global rank stage * tp*cp*dp + index; the
// simulated GPU (t, c, k-th simulated replica) sits at t + tp * (c + cp * k) in
// StageRanks::gpus. A group spans nodes when its members over all dp replicas do.
class FullStage {
 public:
  FullStage(const Scenario& s, int stage, const std::vector<int>& simulated, const ReplicaClasses* classes)
      : s_(s), p_(s.plan), stage_(stage), replicas_(static_cast<int>(simulated.size())), simulated_(simulated),
        classes_(classes) {}

  StageRanks build(engine::TaskGraph& g, Links& links) const {
    StageRanks sr;
    for (int k = 0; k < replicas_; ++k)
      for (int i = 0; i < p_.tp * p_.cp; ++i)
        sr.gpus.push_back(gpu(g, links, rank(i + p_.tp * p_.cp * simulated_[static_cast<std::size_t>(k)]), k));
    for (int d = 0; d < replicas_; ++d)
      for (int c = 0; c < p_.cp; ++c) {
        RankGroup& tp = sr.tp.emplace_back();
        for (int t = 0; t < p_.tp; ++t) tp.members.push_back(index(t, c, d));
        spans_of_simulated(tp, tp.members);
      }
    for (int d = 0; d < replicas_; ++d)
      for (int t = 0; t < p_.tp; ++t) {
        RankGroup& cp = sr.cp.emplace_back();
        for (int c = 0; c < p_.cp; ++c) cp.members.push_back(index(t, c, d));
        spans_of_simulated(cp, cp.members);
      }
    // the data-parallel group takes each replica's context-parallel ranks too (PlanKnobs::dp_group_size)
    for (int t = 0; t < p_.tp; ++t) {
      RankGroup& dp = sr.dp.emplace_back();
      std::vector<int> all;  // every replica's member, simulated or not
      for (int d = 0; d < p_.dp; ++d)
        for (int c = 0; c < p_.cp; ++c) all.push_back(t + p_.tp * (c + p_.cp * d));
      for (int d = 0; d < replicas_; ++d)
        for (int c = 0; c < p_.cp; ++c) dp.members.push_back(index(t, c, d));
      set_spans(dp, all);
      dp.all_replicas = true;
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
        spans_of_simulated(ep, ep.members);
      }
    return sr;
  }

 private:
  // the k-th simulated replica's GPU (t, c), as an index into StageRanks::gpus
  int index(int t, int c, int k) const { return t + p_.tp * (c + p_.cp * k); }
  int rank(int index) const { return stage_ * p_.tp * p_.cp * p_.dp + index; }
  // `members`: positions in StageRanks::gpus, standing for their own replicas' groups
  void spans_of_simulated(RankGroup& group, const std::vector<int>& members) const {
    std::vector<int> indices;  // in the stage
    for (int m : members) {
      const int per_replica = p_.tp * p_.cp;
      indices.push_back(m % per_replica + per_replica * simulated_[static_cast<std::size_t>(m / per_replica)]);
    }
    set_spans(group, indices);
  }
  // `indices`: every member of the group over all replicas, simulated or not (stage indices)
  void set_spans(RankGroup& group, const std::vector<int>& indices) const {
    for (int i : indices) {
      group.spans_nodes |= node_of(s_, rank(i)) != node_of(s_, rank(indices.front()));
      group.spans_leaves |= leaf_of(s_, rank(i)) != leaf_of(s_, rank(indices.front()));
      group.spans_pods |= pod_of(s_, rank(i)) != pod_of(s_, rank(indices.front()));
    }
  }

  // GPU `r` of the k-th simulated replica. Its leaf's and pod's uplinks are shared links
  // (fair share among the transfers on them); under hybrid folding one per class of leaves
  // (pods), on which its replica's transfers count as the replicas of its class there.
  StageStreams gpu(engine::TaskGraph& g, Links& links, int r, int k) const {
    StageStreams st = add_gpu(s_, g, r);
    if (s_.cluster.nodes == 1) return st;
    const int per_node = s_.cluster.nics_per_node;
    const int nic = nic_of(s_, r);
    st.nic = made_once(links.nics, nic, [&] {
      return g.add_link("node" + std::to_string(nic / per_node) + ".nic" + std::to_string(nic % per_node));
    });
    const int cls = classes_ ? classes_->class_of[static_cast<std::size_t>(simulated_[static_cast<std::size_t>(k)])] : 0;
    st.leaf = leaf_of(s_, r);
    if (const int slots = leaf_uplink_slots(s_.cluster); slots > 0) {
      const int key = classes_ ? classes_->leaf_class[static_cast<std::size_t>(st.leaf)] : st.leaf;
      st.uplink = made_once(links.uplinks, key, [&] {
        return g.add_shared_link("leaf" + std::to_string(st.leaf) + ".uplink", slots);
      });
      if (classes_) st.uplink_copies = classes_->replicas_on_leaf(cls, stage_, st.leaf);
    }
    st.pod = pod_of(s_, r);
    if (const int slots = pod_uplink_slots(s_.cluster); slots > 0) {
      const int key = classes_ ? classes_->pod_class[static_cast<std::size_t>(st.pod)] : st.pod;
      st.pod_uplink = made_once(links.pod_uplinks, key, [&] {
        return g.add_shared_link("pod" + std::to_string(st.pod) + ".core_uplink", slots);
      });
      if (classes_) st.pod_uplink_copies = classes_->replicas_on_pod(cls, stage_, st.pod);
    }
    return st;
  }

  // The link `key` of `made` (a NIC, a leaf's spine uplink, a pod's core uplink), made when
  // the first of the GPUs sharing it is met.
  template <class Make>
  static engine::ResourceId made_once(std::map<int, engine::ResourceId>& made, int key, Make make) {
    auto it = made.find(key);
    if (it == made.end()) it = made.emplace(key, make()).first;
    return it->second;
  }

  const Scenario& s_;
  const Plan& p_;
  int stage_, replicas_;
  const std::vector<int>& simulated_;   // the simulated replicas' DP indices
  const ReplicaClasses* classes_;       // hybrid folding's classes, or null
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

ReplicaFold replica_fold(const Scenario& s, Fidelity fidelity) {
  ReplicaFold fold;
  int replicas = s.plan.dp;
  if (fidelity == Fidelity::full) replicas = symmetric_replicas(s);
  if (fidelity == Fidelity::full && replicas == s.plan.dp && hybrid_folding_applies(s)) {
    fold.classes = replica_classes(s);
    if (fold.classes.classes() < s.plan.dp) {
      fold.hybrid = true;
      fold.simulated = fold.classes.representatives;
      return fold;
    }
  }
  for (int d = 0; d < replicas; ++d) fold.simulated.push_back(d);
  return fold;
}

std::vector<StageRanks> make_stage_ranks(const Scenario& s, Fidelity fidelity, engine::TaskGraph& g) {
  std::vector<StageRanks> stages;
  Links links;
  const ReplicaFold fold = replica_fold(s, fidelity);
  for (int i = 0; i < s.plan.pp; ++i)
    stages.push_back(is_full(fidelity) ? FullStage(s, i, fold.simulated, fold.hybrid ? &fold.classes : nullptr).build(g, links)
                                       : fast_stage(s, i, g));
  return stages;
}

}  // namespace twinsim
