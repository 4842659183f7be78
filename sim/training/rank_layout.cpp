#include "sim/training/rank_layout.hpp"

#include <algorithm>

namespace twinsim {

namespace {

// A group of `size` ranks `stride` apart: ranks_per_node of them fit on one node.
GroupLayout strided_group(int gpus_per_node, int size, long stride) {
  GroupLayout g;
  g.ranks = size;
  if (stride >= gpus_per_node) {
    g.ranks_per_node = 1;
  } else {
    const long per_node = gpus_per_node / stride;
    g.ranks_per_node = static_cast<int>(std::max<long>(1, std::min<long>(size, per_node)));
  }
  return g;
}

}  // namespace

GroupLayout group_layout(const ClusterSpec& cluster, const Plan& plan, ParallelGroup group) {
  const int gpn = cluster.gpus_per_node;
  switch (group) {
    case ParallelGroup::tp: return strided_group(gpn, plan.tp, 1);
    case ParallelGroup::cp: return strided_group(gpn, plan.cp, plan.tp);
    // the experts' groups, laid over the stage's ranks on their own (Megatron-core's expert
    // RankGenerator, order tp-ep-dp-pp with expert_tp as its tp): expert TP innermost, then EP
    case ParallelGroup::etp: return strided_group(gpn, plan.etp(), 1);
    case ParallelGroup::ep: return strided_group(gpn, plan.ep, plan.etp());
    // the data-parallel group with its context-parallel ranks (PlanKnobs::dp_group_size)
    case ParallelGroup::dp: return strided_group(gpn, static_cast<int>(plan.dp_group_size()), plan.tp);
    case ParallelGroup::expert_dp:
      return strided_group(gpn, static_cast<int>(plan.expert_dp_group_size()), static_cast<long>(plan.etp()) * plan.ep);
    case ParallelGroup::pp:
      return strided_group(gpn, plan.pp, static_cast<long>(plan.tp) * plan.cp * plan.dp);
  }
  return {};
}

GroupLayout pipeline_pair_layout(const ClusterSpec& cluster, const Plan& plan) {
  const long stride = static_cast<long>(plan.tp) * plan.cp * plan.dp;
  GroupLayout pair;
  pair.ranks = 2;
  pair.ranks_per_node = stride < cluster.gpus_per_node ? 2 : 1;
  return pair;
}

}  // namespace twinsim
