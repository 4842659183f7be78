#include "sim/training/rank_layout.hpp"

#include <algorithm>
#include <numeric>

#include "models/hybrid_shard_layout.hpp"

namespace twinsim {

namespace {

// The fewest of one group's ranks that share a node, over every group of `size` ranks
// `stride` apart: groups fill blocks of size x stride consecutive ranks, and where such a
// block does not tile the node (64 ranks on a 72-GPU NVL72 rack) some groups straddle two
// nodes, the node holding fewest of their ranks setting a ring's pace. Counted over one
// period of the layout, lcm(block, node) ranks.
int fewest_ranks_on_a_node(int gpus_per_node, int size, long stride) {
  const long block = size * stride;
  const long period = std::lcm(block, static_cast<long>(gpus_per_node));
  int fewest = size;
  for (long first = 0; first < period; first += block)
    for (long lane = 0; lane < stride; ++lane) {
      int on_node = 0;
      long node = (first + lane) / gpus_per_node;
      for (int k = 0; k < size; ++k) {
        const long rank_node = (first + lane + k * stride) / gpus_per_node;
        if (rank_node != node) fewest = std::min(fewest, on_node), on_node = 0, node = rank_node;
        ++on_node;
      }
      fewest = std::min(fewest, on_node);
    }
  return fewest;
}

// A group of `size` ranks `stride` apart: ranks_per_node of them fit on one node (for a
// group that straddles nodes, the fewest on one).
GroupLayout strided_group(int gpus_per_node, int size, long stride) {
  GroupLayout g;
  g.ranks = size;
  if (stride >= gpus_per_node) {
    g.ranks_per_node = 1;
  } else if (gpus_per_node % (size * stride) == 0 || (size * stride) % gpus_per_node == 0) {
    const long per_node = gpus_per_node / stride;
    g.ranks_per_node = static_cast<int>(std::max<long>(1, std::min<long>(size, per_node)));
  } else {
    g.ranks_per_node = std::max(1, fewest_ranks_on_a_node(gpus_per_node, size, stride));
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
    // hybrid sharding: the shard group and one shard's replicas as the layout's one home
    // (models/hybrid_shard_layout.hpp) places them, tp ranks per data-parallel index
    case ParallelGroup::dp_shard:
      return strided_group(gpn, static_cast<int>(plan.zero_shard_group_size()),
                           static_cast<long>(plan.tp) * HybridShardLayout::shard_stride());
    case ParallelGroup::dp_replicate:
      return strided_group(gpn, std::max(1, plan.dp_replicate),
                           static_cast<long>(plan.tp) * hybrid_shard_layout(plan).replica_stride());
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
  // where the stride does not divide the node, some stage pairs cross a node boundary
  pair.ranks_per_node = stride < cluster.gpus_per_node && cluster.gpus_per_node % stride == 0 ? 2 : 1;
  return pair;
}

}  // namespace twinsim
