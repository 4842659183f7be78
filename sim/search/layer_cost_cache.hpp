#pragma once
// Layer prices for the plan search. A layer's op times and saved activations depend
// only on (tp, cp, ep, sequence parallel, TP overlap, recompute, micro-batch) — not on pp,
// dp, ZeRO or the schedule (TP overlap: the GEMMs' clock under the power limit counts
// overlapped TP collectives as busy time) — so each such key is priced once with the simulator's own
// cost_layer (sim/training/layer_costs.hpp) and layer_activations, then reused by
// every candidate that shares it. After an entry is filled, lookups do not allocate.
#include <cstdint>
#include <vector>

#include "scenario/scenario.hpp"
#include "sim/memory/activations.hpp"
#include "sim/search/candidate.hpp"
#include "sim/training/zero_comm.hpp"

namespace twinsim {

// One pass of a layer (or of the embedding / head) on one GPU, one micro-batch, seconds.
struct PassTimes {
  double fwd = 0, bwd = 0, recompute = 0;  // compute-stream work
  double tp_fwd = 0, tp_bwd = 0;           // TP collectives (blocking unless tp_comm_overlap)
  double tp_fwd_waited = 0, tp_bwd_waited = 0;  // of those, overlapped, what the compute waits for
  double tp_recompute = 0, tp_recompute_waited = 0;  // the TP collectives the recompute runs again
  double cp_fwd = 0, cp_bwd = 0;           // ring attention exchange (side stream)
  double cp_fwd_waited = 0, cp_bwd_waited = 0;  // of those, what the compute waits for (PyTorch's)
  double ep_fwd = 0, ep_bwd = 0;           // expert all-to-all (blocking)
};

struct LayerPrices {
  PassTimes dense, moe, embedding, head;
  LayerActivations activations;
  LowRankShare low_rank;  // the scenario's plan.gradient_compression: powersgd, at this key's tp/cp/ep
};

class LayerCostCache {
 public:
  // Keys are drawn from these values (the search space's lists); others throw.
  LayerCostCache(const Scenario& base, const std::vector<int>& tp_values, const std::vector<int>& cp_values,
                 const std::vector<int>& ep_values, int max_micro_batch);

  // Prices for the candidate's (tp, expert_tp, cp, ep, sp, tp_comm_overlap, recompute, micro_batch); fills the entry
  // on first use.
  const LayerPrices& get(const Candidate& c);
  std::size_t filled() const { return filled_; }

 private:
  std::size_t index(const Candidate& c) const;
  void fill(const Candidate& c, LayerPrices& out);

  Scenario scratch_;  // the base scenario, its plan rewritten per key
  PlanKnobs base_plan_;  // ... as it was: its gradient compression, which some candidates drop
  std::vector<int> tp_slot_, cp_slot_, ep_slot_;  // value -> position, -1 when absent
  int tps_ = 0, cps_ = 0, eps_ = 0, mbs_ = 0;
  std::vector<LayerPrices> prices_;
  std::vector<char> ready_;
  std::size_t filled_ = 0;
};

struct LayerCost;
PassTimes pass_times(const LayerCost& cost);

}  // namespace twinsim
