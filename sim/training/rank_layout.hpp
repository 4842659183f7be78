#pragma once
// Where the ranks of each parallel group sit on the nodes. Ranks are numbered as
// Megatron-LM's default order "tp-cp-ep-dp-pp" (megatron/core/parallel_state.py): TP
// varies fastest, so a TP group shares a node, and PP neighbours are furthest apart.
#include "hardware/cluster_spec.hpp"
#include "models/plan.hpp"
#include "sim/cost/collective_cost.hpp"

namespace twinsim {

// dp: the data-parallel group with the CP ranks (PlanKnobs::dp_group_size); etp: the routed
// experts' tensor-parallel group (PlanKnobs::etp); expert_dp: the ranks holding the same
// routed experts (PlanKnobs::expert_dp_group_size), ep x expert_tp apart. Under hybrid
// sharding (plan.dp_replicate) dp_shard is one shard group (PlanKnobs::zero_shard_group_size,
// consecutive dp ranks with their cp ranks: torchtitan's mesh ["dp_replicate", "dp_shard",
// "cp", "tp"], FSDP1 HYBRID_SHARD's intra-node group) and dp_replicate the dp_replicate ranks
// holding the same shard, a shard group apart; without it dp_shard is dp and dp_replicate one rank.
enum class ParallelGroup { tp, cp, ep, etp, dp, expert_dp, pp, dp_shard, dp_replicate };

// Size of the group and how many of its ranks share a node.
GroupLayout group_layout(const ClusterSpec& cluster, const Plan& plan, ParallelGroup group);

// The pair of ranks exchanging activations between neighbouring pipeline stages.
GroupLayout pipeline_pair_layout(const ClusterSpec& cluster, const Plan& plan);

}  // namespace twinsim
