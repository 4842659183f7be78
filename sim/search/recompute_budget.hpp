#pragma once
// Per-layer activation recomputation under a memory budget: instead of one policy for
// every layer, each layer of a pipeline stage keeps all its activations (none),
// drops its attention scores/softmax (selective, Korthikanti et al. 2022 §5) or keeps
// only its input (full, Chen et al. 2016). Choosing, per layer, the cheapest policy
// whose total fits is a multiple-choice knapsack; the layers of a stage are identical,
// so it reduces to how many layers take each policy, solved exactly by enumerating the
// counts. Megatron-LM runs the none/full part of it (--recompute-method block
// --recompute-num-layers N); mixing selective and full layers in one stage is beyond
// its flags, and the event engine simulates one policy per plan, so the mix's time is
// this closed form: recomputed forward time x micro-batches.
//
// Assumptions: the budget is checked on the first pipeline stage (the most micro-batches
// in flight); a model with MoE layers is treated as if all the stage's layers were of
// its majority kind.
#include <cstdint>

#include "scenario/scenario.hpp"

namespace twinsim {

struct PolicyCost {
  std::int64_t peak_bytes = 0;  // first stage, one GPU
  double recompute_s = 0;       // per step on that GPU
  bool fits = false;
};

struct RecomputeMix {
  std::int64_t budget_bytes = 0;
  std::int64_t layers = 0;  // on the stage
  std::int64_t none = 0, selective = 0, full = 0;  // layers per policy (best mix)
  bool feasible = false;    // some mix fits
  PolicyCost mix, all_none, all_selective, all_full;
  // per layer and micro-batch: bytes kept under each policy, and recompute seconds
  std::int64_t kept_none = 0, kept_selective = 0, kept_full = 0;
  double time_selective_s = 0, time_full_s = 0;
};

// `budget_bytes` <= 0: the GPU's memory.
RecomputeMix plan_recompute(const Scenario& s, std::int64_t budget_bytes = 0);

}  // namespace twinsim
