#include "exec/train/memory_estimate.hpp"

#include "exec/model/transformer.hpp"
#include "exec/train/zero.hpp"

namespace twinsim::exec {

namespace {

// The bytes of ShardedOptimizer's state for P elements of which this rank's shares hold
// `share` (P over the DP degree; expert segments over the expert-DP degree), as zero.cpp
// allocates it (params and grads in the storage type, optimizer state in fp32). ZeRO's
// accounting (Rajbhandari et al. 2020, §3.1 and Fig. 1): parameters, gradients and K
// bytes of optimizer state per parameter, each divided by N_d from stage 3, 2 and 1 on.
StateEstimate state_bytes(const TrainConfig& c, std::int64_t p, std::int64_t share) {
  const std::int64_t d = c.plan.dp, f = 4;
  const std::int64_t stored = c.training.precision == Dtype::fp32 ? 4 : 2;
  const Plan& plan = c.plan;
  StateEstimate e;
  e.params = p;
  e.params_bytes = stored * (plan.shards_params() ? share : p);
  // from ZeRO 2 on the unsharded grads exist a bucket at a time, as buffers
  e.grads_bytes = stored * (plan.shards_grads() ? share : p);
  // compressed reduction (ZeRO 0-1 over dp > 1): an fp32 error-feedback residual per value
  if (plan.gradient_compression != GradCompression::none && !plan.shards_grads() && d > 1) e.grads_bytes += f * p;
  const int moments = c.training.optimizer == Optimizer::adam ? 2 : 1;  // zero.cpp keeps m for SGD too
  const int master = c.training.precision == Dtype::fp32 ? 0 : 1;       // fp32 master copy (Micikevicius 2018 §3.1)
  e.optimizer_bytes = f * (moments + master) * (plan.shards_optimizer() ? share : p);
  if (c.plan.offload_optimizer) e.optimizer_bytes = 0;  // on the host (zero.cpp), not in the GPU's capacity
  return e;
}

}  // namespace

StateEstimate estimate_training_state(const TrainConfig& c) {
  StateEstimate worst;
  for (int stage = 0; stage < c.plan.pp; ++stage) {
    RankCoords coords;
    coords.pp = stage;
    const TransformerConfig t = stage_config(c, coords);
    std::int64_t p = 0, share = 0;  // laid out as the Trainer lays its blocks out (flat_layout)
    const int expert_dp = expert_pad_multiple(c.plan);
    for (const BlockSpecs& b : stage_block_specs(t)) {
      const FlatLayout l = flat_layout(b.specs, t.tp, c.plan.dp, expert_dp);
      p += static_cast<std::int64_t>(l.flat);
      share += static_cast<std::int64_t>(l.experts_begin) / c.plan.dp;
      if (l.flat > l.experts_begin) share += static_cast<std::int64_t>(l.flat - l.experts_begin) / expert_dp;
    }
    StateEstimate e = state_bytes(c, p, share);
    e.pp_stage = stage;
    if (stage == 0 || e.total_bytes() > worst.total_bytes()) worst = e;
  }
  return worst;
}

std::string describe(const StateEstimate& e, std::int64_t capacity_bytes) {
  return "estimated training state " + std::to_string(e.total_bytes()) + " bytes per rank (pipeline stage " +
         std::to_string(e.pp_stage) + ": " + std::to_string(e.params) + " parameters; params " +
         std::to_string(e.params_bytes) + " + grads " + std::to_string(e.grads_bytes) + " + optimizer " +
         std::to_string(e.optimizer_bytes) + " bytes, activations not counted) against a capacity of " +
         std::to_string(capacity_bytes) + " bytes";
}

}  // namespace twinsim::exec
