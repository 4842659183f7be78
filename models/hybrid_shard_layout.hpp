#pragma once
// Hybrid sharding's rank layout (plan.dp_replicate), its one home: the data-parallel group's
// indices (dp x cp, cp innermost, as PlanKnobs::dp_group_size counts them) split into
// dp_replicate replicas of PlanKnobs::zero_shard_group_size consecutive indices, replicate
// outer and shard inner (torchtitan's DeviceMesh ["dp_replicate", "dp_shard", "cp", "tp"];
// FSDP1 HYBRID_SHARD's intra-node shard group). The simulator lays its groups out by it
// (sim/training/rank_layout.cpp), the executor splits its communicators by it
// (exec/runtime/process_groups.cpp).
#include <cstdint>

#include "models/plan.hpp"

namespace twinsim {

struct HybridShardLayout {
  std::int64_t shard_size = 1;  // one shard group: dp * cp / dp_replicate indices
  // index = shard_rank + shard_size * replica
  std::int64_t shard_rank(std::int64_t dp_index) const { return dp_index % shard_size; }
  std::int64_t replica(std::int64_t dp_index) const { return dp_index / shard_size; }
  std::int64_t dp_index(std::int64_t replica, std::int64_t shard_rank) const {
    return shard_rank + shard_size * replica;
  }
  // how far apart in the data-parallel indices a shard group's ranks sit, and one shard's replicas
  static constexpr std::int64_t shard_stride() { return 1; }
  std::int64_t replica_stride() const { return shard_size; }
};

inline HybridShardLayout hybrid_shard_layout(const PlanKnobs& plan) { return {plan.zero_shard_group_size()}; }

}  // namespace twinsim
