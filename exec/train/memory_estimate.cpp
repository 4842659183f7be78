#include "exec/train/memory_estimate.hpp"

#include <algorithm>

#include "exec/model/transformer.hpp"
#include "exec/train/zero.hpp"
#include "models/optimizer_state.hpp"

namespace twinsim::exec {

namespace {

// The elements of a stage's gradient buffers (ParamBlock::grad_size): the dense segments', and
// the expert segments' with the degree that shards them.
struct GradElements {
  std::int64_t dense = 0, experts = 0, expert_dp = 1;
};

// What ShardedOptimizer's segments cover of a block laid out as `l` (zero.hpp covered): the
// gradient buffer, or under ZeRO 3 the whole flat buffer.
std::size_t covered(const TrainConfig& c, const FlatLayout& l) { return c.plan.shards_params() ? l.flat : l.grads; }

// The bytes of ShardedOptimizer's state for P elements of which this rank's shares hold
// `share` (P over the DP degree; expert segments over the expert-DP degree), as zero.cpp
// allocates it (params and grads in the storage type, optimizer state in fp32). ZeRO's
// accounting (Rajbhandari et al. 2020, §3.1 and Fig. 1): parameters, gradients and K
// bytes of optimizer state per parameter, each divided by N_d from stage 3, 2 and 1 on.
StateEstimate state_bytes(const TrainConfig& c, std::int64_t p, std::int64_t share, std::int64_t states,
                          const GradElements& grads) {
  const std::int64_t d = dense_pad_multiple(c.plan), f = 4;  // the ZeRO degree: dp, or one shard group
  const std::int64_t stored = c.training.precision == Dtype::fp32 ? 4 : 2;
  const Plan& plan = c.plan;
  StateEstimate e;
  e.params = p;
  e.params_bytes = stored * (plan.shards_params() ? share : p);
  // the trainable parameters' (a frozen base has none), the simulator's count; from ZeRO 2 on the
  // unsharded grads exist a bucket at a time, as buffers
  e.grads_bytes = gradient_bytes(grads.dense, stored, plan.shards_grads(), d) +
                  gradient_bytes(grads.experts, stored, plan.shards_grads(), grads.expert_dp);
  // compressed reduction (ZeRO 0-1 over dp > 1): an fp32 error-feedback residual per value
  if (plan.gradient_compression != GradCompression::none && !plan.shards_grads() && d > 1)
    e.grads_bytes += f * (grads.dense + grads.experts);
  // the states of the elements this rank steps (`states`: its share, or under LoRA the
  // adapters' part of it), as many bytes each as the simulator counts (models/optimizer_state)
  e.optimizer_bytes = optimizer_bytes_per_param(c.training.precision, c.training.optimizer) * states;
  if (c.plan.offload_optimizer) e.optimizer_bytes = 0;  // on the host (zero.cpp), not in the GPU's capacity
  return e;
}

// The elements whose optimizer states the busiest data-parallel rank keeps for a block laid out
// as `l`: its share of the dense segment ([r n/d, (r+1) n/d) under ZeRO 1 on, all of it below),
// the trainable ones only where a frozen slot (training.lora's base) lies in it, as zero.cpp's
// optimizer_spans leaves them out. The expert segment is the caller's (LoRA runs dense models).
std::int64_t dense_state_elements(const TrainConfig& c, const std::vector<ParamSpec>& specs, const FlatLayout& l) {
  const int ranks = c.plan.shards_optimizer() ? dense_pad_multiple(c.plan) : 1;
  const std::size_t n = std::min(l.experts_begin, covered(c, l)), width = n / static_cast<std::size_t>(ranks);
  std::int64_t most = 0;
  for (int r = 0; r < ranks; ++r) {
    const std::size_t lo = r * width, hi = lo + width;
    std::int64_t trainable = 0;
    bool frozen = false;
    for (std::size_t i = 0; i < specs.size(); ++i) {
      if (specs[i].expert) continue;
      const std::size_t count = static_cast<std::size_t>(shard_count(specs[i], c.plan.tp));
      const std::size_t a = std::max(lo, l.offsets[i]), b = std::min(hi, l.offsets[i] + count);
      if (a >= b) continue;
      if (specs[i].trainable) trainable += static_cast<std::int64_t>(b - a);
      else frozen = true;
    }
    most = std::max(most, frozen ? trainable : static_cast<std::int64_t>(width));
  }
  return most;
}

}  // namespace

StateEstimate estimate_training_state(const TrainConfig& c) {
  StateEstimate worst;
  for (int stage = 0; stage < c.plan.pp; ++stage) {
    RankCoords coords;
    coords.pp = stage;
    const TransformerConfig t = stage_config(c, coords);
    std::int64_t p = 0, share = 0, states = 0;  // laid out as the Trainer lays its blocks out (flat_layout)
    const int expert_dp = expert_pad_multiple(c.plan);
    GradElements grads{0, 0, std::max(expert_dp, 1)};
    for (const BlockSpecs& b : stage_block_specs(t)) {
      const FlatLayout l = flat_layout(b.specs, t.tp, dense_pad_multiple(c.plan), expert_dp);
      p += static_cast<std::int64_t>(l.flat);
      share += static_cast<std::int64_t>(l.experts_begin) / dense_pad_multiple(c.plan);
      states += dense_state_elements(c, b.specs, l);
      const std::size_t dense = std::min(l.experts_begin, covered(c, l));
      grads.dense += static_cast<std::int64_t>(dense);
      grads.experts += static_cast<std::int64_t>(covered(c, l) - dense);
      if (l.flat > l.experts_begin) {
        const auto experts = static_cast<std::int64_t>(l.flat - l.experts_begin);
        share += experts / expert_dp;
        states += c.plan.shards_optimizer() ? experts / expert_dp : experts;
      }
    }
    StateEstimate e = state_bytes(c, p, share, states, grads);
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
