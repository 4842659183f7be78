#include "models/pipeline_split.hpp"

#include <algorithm>

namespace twinsim {

int chunks_per_stage(const PlanKnobs& plan) {
  return plan.schedule == Schedule::interleaved ? std::max(plan.virtual_stages, 1) : 1;
}

int dualpipe_mirror_stage(const PlanKnobs& plan, int stage) {
  return plan.schedule == Schedule::dualpipe ? plan.pp - 1 - stage : -1;
}

Plan one_stage_a_rank(const Plan& plan) {
  Plan one = plan;
  if (one.schedule == Schedule::dualpipe) one.schedule = Schedule::one_f_one_b;
  return one;
}

int split_extras(const PlanKnobs& plan, int stage) {
  const bool embedding = plan.account_for_embedding_in_pipeline_split && stage == 0;
  const bool loss = plan.account_for_loss_in_pipeline_split && stage == plan.pp - 1;
  return (embedding ? 1 : 0) + (loss ? 1 : 0);
}

std::int64_t split_chunk_layers(std::int64_t stage_layers, const PlanKnobs& plan, int stage, int chunk) {
  const int v = chunks_per_stage(plan);
  const std::int64_t units = stage_layers + split_extras(plan, stage);
  std::int64_t layers = units / v + (chunk < units % v ? 1 : 0);
  if (plan.account_for_embedding_in_pipeline_split && stage == 0 && chunk == 0) --layers;
  if (plan.account_for_loss_in_pipeline_split && stage == plan.pp - 1 && chunk == v - 1) --layers;
  return std::max<std::int64_t>(layers, 0);
}

std::vector<int> accounted_stage_layers(std::int64_t layers, const PlanKnobs& plan) {
  const std::int64_t virtual_stages = static_cast<std::int64_t>(plan.pp) * chunks_per_stage(plan);
  const std::int64_t units = layers + split_extras(plan, 0) + (plan.pp > 1 ? split_extras(plan, plan.pp - 1) : 0);
  if (plan.pp < 1 || units % virtual_stages != 0) return {};
  const std::int64_t per_stage = units / virtual_stages * chunks_per_stage(plan);
  std::vector<int> out(plan.pp);
  for (int i = 0; i < plan.pp; ++i) out[i] = static_cast<int>(per_stage - split_extras(plan, i));
  return out;
}

}  // namespace twinsim
