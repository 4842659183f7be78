#pragma once
// The GPUs a step simulation follows, per pipeline stage, and their parallel groups.
// Fast mode keeps one GPU per stage, standing for all its replicas; full mode keeps
// every GPU, numbered in Megatron's order tp-cp-ep-dp-pp (rank_layout.hpp).
#include <vector>

#include "scenario/scenario.hpp"
#include "sim/engine/task_graph.hpp"
#include "sim/training/rank_layout.hpp"
#include "sim/training/step_graph.hpp"

namespace twinsim {

enum class GroupKind { tp, cp, ep, dp };

inline ParallelGroup parallel_group(GroupKind kind) {
  switch (kind) {
    case GroupKind::tp: return ParallelGroup::tp;
    case GroupKind::cp: return ParallelGroup::cp;
    case GroupKind::ep: return ParallelGroup::ep;
    case GroupKind::dp: return ParallelGroup::dp;
  }
  return ParallelGroup::dp;
}

struct StageRanks {
  std::vector<StageStreams> gpus;
  // member indices into `gpus`, one list per group of that kind on this stage
  std::vector<std::vector<int>> tp, cp, ep, dp;
  const std::vector<std::vector<int>>& groups(GroupKind k) const {
    return k == GroupKind::tp ? tp : k == GroupKind::cp ? cp : k == GroupKind::ep ? ep : dp;
  }
};

// Adds the streams (and, in full mode across nodes, one NIC link per GPU rail) to `g`.
std::vector<StageRanks> make_stage_ranks(const Scenario& s, Fidelity fidelity, engine::TaskGraph& g);

// The node a global rank sits on.
int node_of(const Scenario& s, int rank);

}  // namespace twinsim
