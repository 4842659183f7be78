#pragma once
// How a pipeline stage's transformer layers split into its virtual stages (model chunks), and
// Megatron-core's split that counts the embedding and the loss as a layer each
// (plan.account_for_embedding_in_pipeline_split / account_for_loss_in_pipeline_split). One home:
// the scenario's validation, the memory model and the step graph all call these.
#include <cstdint>
#include <vector>

#include "models/plan.hpp"

namespace twinsim {

// Virtual stages per stage: plan.virtual_stages under the interleaved schedule, else 1.
int chunks_per_stage(const PlanKnobs& plan);

// DualPipe (plan.schedule: dualpipe, sim/training/dualpipe_schedule.hpp): rank `stage` holds
// pipeline stage `stage`'s layers (its chunk 0) and stage pp-1-stage's (its chunk 1); this
// returns pp-1-stage, or -1 under the schedules that hold one stage a rank.
int dualpipe_mirror_stage(const PlanKnobs& plan, int stage);
// `plan` with one stage a rank (DualPipe's chunks are each one 1F1B stage): the 1F1B plan.
Plan one_stage_a_rank(const Plan& plan);

// What stage `stage` holds besides its transformer layers in the split: the embedding (on the
// first stage) and the loss (on the last), each where the plan counts it as a layer; 0 to 2.
int split_extras(const PlanKnobs& plan, int stage);

// Whether the plan counts the embedding or the loss as a layer of the split.
inline bool accounts_in_split(const PlanKnobs& plan) {
  return plan.account_for_embedding_in_pipeline_split || plan.account_for_loss_in_pipeline_split;
}

// Transformer layers of virtual stage `chunk` of a stage holding `stage_layers` of them. The
// stage's units (layers and extras) split as evenly as they go, the first chunks one longer;
// the embedding takes its place in the first chunk of the first stage, the loss in the last
// chunk of the last stage (Megatron-core's get_num_layers_to_build).
std::int64_t split_chunk_layers(std::int64_t stage_layers, const PlanKnobs& plan, int stage, int chunk);

// Megatron's layers per stage when the split counts the embedding and/or the loss: (layers +
// extras) / (pp x virtual stages) units a virtual stage, the extras' stages one layer fewer for
// each. Empty when the units do not divide (the caller names the rule).
std::vector<int> accounted_stage_layers(std::int64_t layers, const PlanKnobs& plan);

}  // namespace twinsim
