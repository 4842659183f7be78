#include "exec/runtime/process_groups.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "models/hybrid_shard_layout.hpp"

namespace twinsim::exec {

namespace {

// A rank's position in its stage's flattened tp x cp x dp space, which the experts' etp x ep x
// expert-dp layout tiles (process_groups.hpp), and back to a global rank.
int stage_index(const ParallelDims& d, const RankCoords& c) { return c.tp + d.tp * (c.cp + d.cp * c.dp); }
int rank_at_stage_index(const ParallelDims& d, int index, int pp) {
  return index % d.tp + d.tp * (index / d.tp % d.cp + d.cp * (index / (d.tp * d.cp) + d.dp * pp));
}
int expert_dp_size(const ParallelDims& d) { return d.tp * d.cp * d.dp / (d.ep * d.expert_tp()); }
HybridShardLayout hybrid_layout(const ParallelDims& d) {
  return {static_cast<std::int64_t>(d.cp) * d.dp / d.dp_replicate};
}

// The ranks that share every coordinate with `rank` except those `vary` walks over.
template <typename Vary>
std::vector<int> collect(int count, Vary vary) {
  std::vector<int> ranks;
  ranks.reserve(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) ranks.push_back(vary(i));
  return ranks;
}

}  // namespace

ParallelDims ParallelDims::from_plan(const Plan& plan) {
  ParallelDims d;
  d.tp = plan.tp;
  d.cp = plan.cp;
  d.ep = plan.ep;
  d.etp = plan.expert_tp;
  d.dp = plan.dp;
  d.pp = plan.pp;
  d.dp_replicate = plan.dp_replicate;
  return d;
}

void validate(const ParallelDims& d) {
  const auto positive = [](const char* key, int v) {
    if (v < 1)
      throw std::invalid_argument(std::string("plan.") + key + " = " + std::to_string(v) +
                                  ": a parallel degree must be >= 1");
  };
  positive("tp", d.tp);
  positive("cp", d.cp);
  positive("ep", d.ep);
  positive("expert_tp", d.expert_tp());
  positive("dp", d.dp);
  positive("pp", d.pp);
  positive("dp_replicate", d.dp_replicate);
  if (d.dp % d.dp_replicate != 0)
    throw std::invalid_argument("plan.dp_replicate = " + std::to_string(d.dp_replicate) +
                                ": must divide plan.dp = " + std::to_string(d.dp) + " (equal shard groups)");
  if ((d.tp * d.cp * d.dp) % (d.ep * d.expert_tp()) != 0)
    throw std::invalid_argument("plan.ep = " + std::to_string(d.ep) +
                                ", plan.expert_tp = " + std::to_string(d.expert_tp()) +
                                ": ep * expert_tp must divide tp * cp * dp = " + std::to_string(d.tp * d.cp * d.dp) +
                                " (the experts' groups tile a stage's ranks)");
}

RankCoords rank_coords(const ParallelDims& d, int rank) {
  if (rank < 0 || rank >= d.world_size())
    throw std::out_of_range("rank " + std::to_string(rank) + " outside world of " +
                            std::to_string(d.world_size()));
  // rank = tp + TP * (cp + CP * (dp + DP * pp)), Megatron-core order "tp-cp-ep-dp-pp"
  RankCoords c;
  int r = rank;
  c.tp = r % d.tp;
  r /= d.tp;
  c.cp = r % d.cp;
  r /= d.cp;
  c.dp = r % d.dp;
  c.pp = r / d.dp;
  const int index = stage_index(d, c);  // = etp_rank + etp * (ep_rank + ep * expert_dp_rank)
  c.etp = index % d.expert_tp();
  c.ep = index / d.expert_tp() % d.ep;
  c.expert_dp = index / (d.expert_tp() * d.ep);
  return c;
}

int global_rank(const ParallelDims& d, int tp, int cp, int dp, int pp) {
  return tp + d.tp * (cp + d.cp * (dp + d.dp * pp));
}

std::vector<int> group_ranks(const ParallelDims& d, int rank, GroupKind kind) {
  const RankCoords c = rank_coords(d, rank);
  // rank of the given position in the flattened cp x dp space, other coordinates fixed
  const auto at_cp_dp = [&](int index) { return global_rank(d, c.tp, index % d.cp, index / d.cp, c.pp); };
  // rank of the given expert coordinates in this rank's stage
  const auto at_expert = [&](int etp, int ep, int edp) {
    return rank_at_stage_index(d, etp + d.expert_tp() * (ep + d.ep * edp), c.pp);
  };
  // hybrid sharding: this rank's place in the dp_cp group, split as the layout's one home says
  const HybridShardLayout hybrid = hybrid_layout(d);
  const std::int64_t dp_index = c.cp + static_cast<std::int64_t>(d.cp) * c.dp;
  const auto in_shard_group = [&](int k) {
    return at_cp_dp(static_cast<int>(hybrid.dp_index(hybrid.replica(dp_index), k)));
  };
  const auto replica_of_shard = [&](int k) {
    return at_cp_dp(static_cast<int>(hybrid.dp_index(k, hybrid.shard_rank(dp_index))));
  };
  switch (kind) {
    case GroupKind::tp: return collect(d.tp, [&](int i) { return global_rank(d, i, c.cp, c.dp, c.pp); });
    case GroupKind::cp: return collect(d.cp, [&](int i) { return global_rank(d, c.tp, i, c.dp, c.pp); });
    case GroupKind::dp: return collect(d.dp, [&](int i) { return global_rank(d, c.tp, c.cp, i, c.pp); });
    case GroupKind::dp_cp: return collect(d.cp * d.dp, at_cp_dp);
    case GroupKind::pp: return collect(d.pp, [&](int i) { return global_rank(d, c.tp, c.cp, c.dp, i); });
    case GroupKind::ep: return collect(d.ep, [&](int i) { return at_expert(c.etp, i, c.expert_dp); });
    case GroupKind::expert_dp: return collect(expert_dp_size(d), [&](int i) { return at_expert(c.etp, c.ep, i); });
    case GroupKind::dp_shard: return collect(static_cast<int>(hybrid.shard_size), in_shard_group);
    case GroupKind::dp_replicate: return collect(d.dp_replicate, replica_of_shard);
    case GroupKind::embedding: {
      // Megatron-core: the first and last rank of each pipeline group (one when pp == 1)
      if (c.pp != 0 && c.pp != d.pp - 1) return {};
      std::vector<int> ranks = {global_rank(d, c.tp, c.cp, c.dp, 0)};
      if (d.pp > 1) ranks.push_back(global_rank(d, c.tp, c.cp, c.dp, d.pp - 1));
      return ranks;
    }
  }
  return {};
}

namespace {

// Splits `world` so that each group of `kind` becomes one communicator: the color is the
// group's lowest global rank, the key the position in the group.
std::unique_ptr<Communicator> split_group(Communicator& world, const ParallelDims& d,
                                          GroupKind kind) {
  const std::vector<int> ranks = group_ranks(d, world.rank(), kind);
  if (ranks.empty()) return world.split(-1, 0);
  int key = 0;
  while (ranks[static_cast<std::size_t>(key)] != world.rank()) ++key;
  int color = ranks.front();
  for (int r : ranks) color = std::min(color, r);
  return world.split(color, key);
}

}  // namespace

ProcessGroups::ProcessGroups(Communicator& world, const ParallelDims& dims)
    : world_(world), dims_(dims) {
  validate(dims_);
  if (world.size() != dims_.world_size())
    throw std::invalid_argument("world size " + std::to_string(world.size()) +
                                " != tp * cp * dp * pp = " + std::to_string(dims_.world_size()) +
                                " (launch with mpirun -np " + std::to_string(dims_.world_size()) +
                                ")");
  coords_ = rank_coords(dims_, world.rank());
  // every rank takes part in every split, in the same order (MPI_Comm_split is collective)
  tp_ = split_group(world, dims_, GroupKind::tp);
  cp_ = split_group(world, dims_, GroupKind::cp);
  dp_ = split_group(world, dims_, GroupKind::dp);
  dp_cp_ = split_group(world, dims_, GroupKind::dp_cp);
  pp_ = split_group(world, dims_, GroupKind::pp);
  ep_ = split_group(world, dims_, GroupKind::ep);
  expert_dp_ = split_group(world, dims_, GroupKind::expert_dp);
  embedding_ = split_group(world, dims_, GroupKind::embedding);
  dp_shard_ = split_group(world, dims_, GroupKind::dp_shard);
  dp_replicate_ = split_group(world, dims_, GroupKind::dp_replicate);
}

void ProcessGroups::record_collectives(CollectiveObserver& observer) {
  const auto wrap = [&](std::unique_ptr<Communicator>& group, const char* name) {
    if (group) group = std::make_unique<RecordingCommunicator>(std::move(group), name, observer);
  };
  wrap(tp_, "tp");
  wrap(cp_, "cp");
  wrap(dp_, "dp");
  wrap(dp_cp_, "dp_cp");
  wrap(pp_, "pp");
  wrap(ep_, "ep");
  wrap(expert_dp_, "expert_dp");
  wrap(embedding_, "embedding");
  wrap(dp_shard_, "dp_shard");
  wrap(dp_replicate_, "dp_replicate");
}

Communicator& ProcessGroups::group(GroupKind kind) {
  switch (kind) {
    case GroupKind::tp: return tp();
    case GroupKind::cp: return cp();
    case GroupKind::dp: return dp();
    case GroupKind::dp_cp: return dp_cp();
    case GroupKind::pp: return pp();
    case GroupKind::ep: return ep();
    case GroupKind::expert_dp: return expert_dp();
    case GroupKind::embedding: return embedding();
    case GroupKind::dp_shard: return dp_shard();
    case GroupKind::dp_replicate: return dp_replicate();
  }
  throw std::logic_error("unknown GroupKind");
}

std::unique_ptr<Communicator>& ProcessGroups::slot(GroupKind kind) {
  switch (kind) {
    case GroupKind::tp: return tp_;
    case GroupKind::cp: return cp_;
    case GroupKind::dp: return dp_;
    case GroupKind::dp_cp: return dp_cp_;
    case GroupKind::pp: return pp_;
    case GroupKind::ep: return ep_;
    case GroupKind::expert_dp: return expert_dp_;
    case GroupKind::embedding: return embedding_;
    case GroupKind::dp_shard: return dp_shard_;
    case GroupKind::dp_replicate: return dp_replicate_;
  }
  throw std::logic_error("unknown GroupKind");
}

void ProcessGroups::replace_group(GroupKind kind, std::unique_ptr<Communicator> replacement) {
  slot(kind) = std::move(replacement);
}

Communicator& ProcessGroups::embedding() {
  if (!embedding_)
    throw std::logic_error("rank " + std::to_string(world_.rank()) + " (pipeline stage " +
                           std::to_string(coords_.pp) +
                           ") is in no embedding group: only the first and last stage are");
  return *embedding_;
}

}  // namespace twinsim::exec
