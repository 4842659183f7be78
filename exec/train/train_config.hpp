#pragma once
// What one training run needs: the scenario's model, plan and workload, plus the
// executor's own knobs (steps, seed, learning rate) that a scenario does not carry.
#include <cstdint>

#include "exec/model/transformer_config.hpp"
#include "exec/runtime/process_groups.hpp"
#include "models/model_spec.hpp"
#include "models/plan.hpp"
#include "models/workload.hpp"

namespace twinsim::exec {

struct TrainConfig {
  ModelSpec model;
  Plan plan;
  TrainingWorkload training;
  std::uint64_t seed = 1234;    // weights and data
  float lr = 1e-3f;
  float weight_decay = 0.01f;
  float init_std = 0.02f;
  float initial_loss_scale = 65536.0f;  // fp16 only: 2^16 (Micikevicius et al. 2018, §3.2)
  int loss_scale_window = 1000;         // fp16: good steps before the scale doubles
  // ZeRO 2/3 bucket in parameters; < 0: Megatron's default (zero.hpp, ddp_bucket_elements)
  std::int64_t bucket_elements = -1;

  int micro_batches() const { return static_cast<int>(training.micro_batches(plan.dp)); }
};

// Throws a ScenarioError naming the key, the value and the rule for what the executor does not
// run (CP, EP without experts, dualpipe, ZeRO++, parameter offload, ...): `twinsim run` exits 2.
void validate(const TrainConfig& c);

// The transformer piece rank `coords` runs: its TP shard and its pipeline stage's layers.
TransformerConfig stage_config(const TrainConfig& c, const RankCoords& coords);

}  // namespace twinsim::exec
