#pragma once
// The parallel groups of a plan, split from the world communicator in Megatron-core's
// default rank order "tp-cp-ep-dp-pp" (megatron/core/parallel_state.py, RankGenerator):
//   rank = tp_rank + tp * (cp_rank + cp * (dp_rank + dp * pp_rank))
// TP varies fastest and PP slowest, the order the simulator assumes
// (sim/training/rank_layout.hpp). The experts have their own layout over a stage's
// tp x cp x dp ranks (MoE parallel folding; Megatron-core's expert rank generator
// "tp-ep-dp-pp" with the expert TP in place of the TP): with L = tp_rank + tp * (cp_rank +
// cp * dp_rank), a rank's expert coordinates are
//   L = etp_rank + etp * (ep_rank + ep * expert_dp_rank).
// Where the expert TP equals the TP, EP thus splits the data-parallel ranks (cp x dp, cp
// innermost): ep_rank = (cp_rank + cp * dp_rank) % ep.
#include <memory>
#include <vector>

#include "exec/runtime/communicator.hpp"
#include "exec/runtime/recording_communicator.hpp"
#include "models/plan.hpp"

namespace twinsim::exec {

struct ParallelDims {
  int tp = 1;
  int cp = 1;
  int ep = 1;   // ep x etp divides tp x cp x dp
  int etp = 0;  // the routed experts' tensor parallelism (plan.expert_tp); 0: tp, read through expert_tp()
  int dp = 1;
  int pp = 1;
  int dp_replicate = 1;  // hybrid sharding (plan.dp_replicate): divides dp

  int world_size() const { return tp * cp * dp * pp; }
  int expert_tp() const { return etp > 0 ? etp : tp; }
  static ParallelDims from_plan(const Plan& plan);
};

// Where one global rank sits in each dimension.
struct RankCoords {
  int tp = 0;
  int cp = 0;
  int dp = 0;
  int pp = 0;
  int etp = 0;        // rank in its expert-tensor-parallel group: which shard of each expert
  int ep = 0;         // rank in its expert-parallel group
  int expert_dp = 0;  // rank in its expert-data-parallel group (same experts, other data)
};

enum class GroupKind {
  tp,         // tensor parallel: same cp, dp, pp
  cp,         // context parallel: same tp, dp, pp
  dp,         // data parallel: same tp, cp, pp
  dp_cp,      // data x context parallel: where dense gradients are reduced (Megatron)
  pp,         // pipeline: same tp, cp, dp; ordered by stage
  ep,         // expert parallel
  expert_dp,  // expert data parallel: where expert gradients are reduced
  embedding,  // first and last pipeline stage of one pipeline (tied embeddings)
  // hybrid sharding (plan.dp_replicate), laid over dp_cp by models/hybrid_shard_layout.hpp:
  dp_shard,      // one shard group, dp * cp / dp_replicate consecutive dp_cp ranks (ZeRO shards here)
  dp_replicate,  // the dp_replicate ranks holding the same shard, a shard group apart
};

// Checks the degrees (>= 1, ep x etp divides tp x cp x dp); throws std::invalid_argument
// naming them.
void validate(const ParallelDims& dims);

RankCoords rank_coords(const ParallelDims& dims, int rank);
int global_rank(const ParallelDims& dims, int tp, int cp, int dp, int pp);

// The global ranks of `kind`'s group that holds `rank`, in group-rank order. For
// `embedding`, empty when `rank` is neither the first nor the last pipeline stage.
std::vector<int> group_ranks(const ParallelDims& dims, int rank, GroupKind kind);

// This rank's communicators, split from `world` (a collective: every rank calls it).
class ProcessGroups {
 public:
  ProcessGroups(Communicator& world, const ParallelDims& dims);
  ProcessGroups(Communicator& world, const Plan& plan)
      : ProcessGroups(world, ParallelDims::from_plan(plan)) {}

  const ParallelDims& dims() const { return dims_; }
  const RankCoords& coords() const { return coords_; }
  int world_rank() const { return world_.rank(); }

  Communicator& world() { return world_; }
  Communicator& tp() { return *tp_; }
  Communicator& cp() { return *cp_; }
  Communicator& dp() { return *dp_; }
  Communicator& dp_cp() { return *dp_cp_; }
  Communicator& pp() { return *pp_; }
  Communicator& ep() { return *ep_; }
  Communicator& expert_dp() { return *expert_dp_; }
  Communicator& dp_shard() { return *dp_shard_; }
  Communicator& dp_replicate() { return *dp_replicate_; }
  Communicator& group(GroupKind kind);

  // Reports every collective of every group to `observer` from now on (exec/runtime/
  // recording_communicator.hpp), under the group's name ("tp", "dp", "pp", ...). Call it
  // before anything keeps a reference to a group (a Trainer).
  void record_collectives(CollectiveObserver& observer);

  // A test's seam, no user's: `kind`'s communicator becomes `replacement` (the HSDP parity
  // test's one-rank groups in place of the replicas, showing a missing all-reduce is caught).
  // Call it before anything keeps a reference to a group (a Trainer).
  void replace_group(GroupKind kind, std::unique_ptr<Communicator> replacement);

  // pp() ranks are stage indices: the neighbours of stage s are s - 1 and s + 1 there.
  bool is_first_stage() const { return coords_.pp == 0; }
  bool is_last_stage() const { return coords_.pp == dims_.pp - 1; }
  // First and last stage only (both are the same rank when pp == 1).
  bool in_embedding_group() const { return embedding_ != nullptr; }
  Communicator& embedding();

 private:
  std::unique_ptr<Communicator>& slot(GroupKind kind);

  Communicator& world_;
  ParallelDims dims_;
  RankCoords coords_;
  std::unique_ptr<Communicator> tp_, cp_, dp_, dp_cp_, pp_, ep_, expert_dp_, embedding_, dp_shard_, dp_replicate_;
};

}  // namespace twinsim::exec
