#pragma once
// The executor's own up-front memory estimate (it must not include sim/): the bytes one
// rank keeps for the training state — parameters, gradients, optimizer states — counted
// from the model's parameter shapes and the plan, before anything is allocated. A plan
// whose estimate exceeds the capacity is refused by `twinsim run` unless forced.
//
// It is a lower bound on the peak: activations and communication buffers (the ZeRO-2/3
// buckets of unsharded grads and gathered parameters among them) are not in it; the
// tracked allocator catches those.
#include <cstdint>
#include <string>

#include "exec/train/train_config.hpp"

namespace twinsim::exec {

struct StateEstimate {
  int pp_stage = 0;            // the stage with the largest state (every rank agrees)
  std::int64_t params = 0;     // parameter elements of that stage's blocks, TP shard, padded
  std::int64_t params_bytes = 0;
  std::int64_t grads_bytes = 0;
  std::int64_t optimizer_bytes = 0;
  std::int64_t total_bytes() const { return params_bytes + grads_bytes + optimizer_bytes; }
};

// The largest per-rank state over the plan's pipeline stages.
StateEstimate estimate_training_state(const TrainConfig& c);

// One line: the estimate, its parts and the capacity it is compared with.
std::string describe(const StateEstimate& e, std::int64_t capacity_bytes);

}  // namespace twinsim::exec
