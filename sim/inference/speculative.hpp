#pragma once
// Pricing a serving pass with speculative decoding (models/speculative.hpp): the served
// model verifies every decoding sequence's proposals in one pass of K + 1 positions, and a
// draft model, when it is the proposer, runs its K passes on the same GPUs before that,
// one after another (vLLM's draft runner: the first pass over what the served model
// would run without speculation, then K - 1 single-token passes). An n-gram proposer runs
// on the CPU and is not priced. Without speculation a pass is the served model's alone.
#include <optional>

#include "scenario/scenario.hpp"
#include "sim/inference/iteration_cost.hpp"
#include "sim/inference/scheduler.hpp"

namespace twinsim {

// The served scenario with the draft model in its place (same cluster, plan, dtypes), no
// speculation: what the draft runs and holds.
Scenario draft_scenario(const Scenario& s);

// A static batch's decode step at `context` tokens (the newest one included), with K
// proposals verified per sequence.
PassShape speculative_decode_pass(std::int64_t batch, std::int64_t context, int proposals, std::int64_t window);

class PassCostModel {
 public:
  explicit PassCostModel(const Scenario& s);
  // The served model's pass with the draft's passes added to the (single) stage's time;
  // compute, communication and bytes summed over both models.
  IterationCost cost(const PassShape& pass) const;
  const ServingCostModel& target() const { return target_; }
  // The draft's part of cost(pass) (0 without a draft model).
  double draft_s(const PassShape& pass) const;

 private:
  // The draft's passes of `pass`, as one cost on a single stage (empty without a draft).
  IterationCost draft_cost(const PassShape& pass) const;
  ServingCostModel target_;
  std::optional<ServingCostModel> draft_;
  int proposals_ = 0;
};

}  // namespace twinsim
