#pragma once
// The fast, closed-form step time and memory of a candidate plan, used to rank
// millions of plans before the event engine confirms the best few.
//
// Step time (per optimizer step, the slowest pipeline stage's GPU):
//   layer pass  = compute + blocking collectives (TP unless overlapped, EP) ;
//                 overlapped comm (CP ring, TP with tp_comm_overlap, ZeRO-3 gathers) only
//                 shows where it is longer than the compute it hides behind
//   stage time  T_i = layers_i x (fwd + recompute + bwd) (+ embedding / head)
//   pipeline    m T_max + (sum_i T_i - T_max) / v: the (p - 1) / (v m) bubble of
//               Narayanan et al. 2021 §2.2 (GPipe and 1F1B alike), generalised to
//               uneven first/last stages, plus 2 (p - 1) activation transfers
//   data par.   gradient reduce in Megatron buckets; overlapped, all but what outlasts
//               the last micro-batch's backward hides (Li et al. 2020, PyTorch DDP §3.2);
//               ZeRO's parameter all-gather (first bucket when overlapped); optimizer
// Memory: the same functions predict_memory sums (sim/memory), for the stages that
// can hold the peak — the first (most micro-batches in flight, the embedding), the
// second (the first all-MoE stage of a model whose first layers are dense) and the
// last (the logits) — so the fit test is exactly the memory model's.
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "scenario/scenario.hpp"
#include "sim/search/knob_cache.hpp"
#include "sim/search/layer_cost_cache.hpp"
#include "sim/search/search_space.hpp"

namespace twinsim {

struct AnalyticEstimate {
  double step_s = 0;
  double pipeline_s = 0;      // compute, recompute and blocking comm incl. the bubble
  double bubble_s = 0;        // of pipeline_s: fill and drain
  double dp_exposed_s = 0;    // gradient reduce and parameter gather not hidden
  double tp_grad_sum_s = 0;   // the step's-end TP all-reduce of replicated grads (step_graph.hpp)
  double optimizer_s = 0;
  std::int64_t peak_bytes = 0;
  bool fits = false;
};

// FSDP's root unit (the parameters outside the layers) on the first and the last stage: its
// gather and reduce-scatter for one micro-batch, seconds (sim/training/zero_comm.hpp)
struct RootUnitPrices {
  struct Stage {
    double gather_s = 0, reduce_s = 0;
  };
  Stage first, last;
};

class AnalyticModel {
 public:
  AnalyticModel(const Scenario& base, const SearchSpace& space);

  // On the stack candidate_scenario gives the candidate: the base's, or, where the base got its
  // stack by default, the default of the candidate's own plan (default_training_stack_name).
  AnalyticEstimate estimate(const Candidate& c);
  std::int64_t capacity_bytes() const { return base_.cluster.gpu.memory_bytes; }
  const LayerCostCache& cache() const { return cache_; }

 private:
  AnalyticEstimate estimate_on_own_stack(const Candidate& c);
  // The model of the base on `stack`, the default of `c`'s plan, made on its first candidate
  // (a search meets at most the few stacks default_training_stack_name returns).
  AnalyticModel& model_on(const Candidate& c, std::string_view stack);
  std::int64_t stage_peak_bytes(const Plan& plan, const TrainingWorkload& t, const LayerActivations& a,
                                int stage) const;
  double layer_pass_s(const Candidate& c, const PassTimes& p, double gather_s, bool forward) const;
  void add_step_end(AnalyticEstimate& e) const;  // plan_ and training_ set to the candidate
  void add_memory(const Candidate& c, const LayerActivations& a, AnalyticEstimate& e) const;  // likewise

  Scenario base_;
  SearchSpace space_;    // what the other stacks' models are made with
  bool stack_per_plan_;  // default_stack_follows_plan(base)
  std::vector<std::unique_ptr<AnalyticModel>> other_stacks_;
  LayerCostCache cache_;
  Plan plan_;               // scratch, rewritten per candidate (no allocation)
  TrainingWorkload training_;
  KnobCache<RootUnitPrices> root_prices_{4096};  // a plan's, whatever its micro-batch
};

}  // namespace twinsim
