#include "sim/memory/stage_layers.hpp"

#include <algorithm>
#include <stdexcept>

namespace twinsim {

namespace {

// Counts the MoE layers (index >= moe.dense_layers) among [first, end).
StageLayers count_range(const ModelSpec& m, std::int64_t first, std::int64_t end) {
  StageLayers s;
  const std::int64_t dense_end = m.moe ? std::clamp<std::int64_t>(m.moe->dense_layers, first, end) : end;
  s.dense = dense_end - first;
  s.moe = end - dense_end;
  return s;
}

void add(StageLayers& to, const StageLayers& from) {
  to.dense += from.dense;
  to.moe += from.moe;
}

}  // namespace

std::int64_t stage_layer_count(const ModelSpec& model, const Plan& plan, int stage) {
  if (plan.pp < 1 || stage < 0 || stage >= plan.pp) throw std::invalid_argument("stage out of range");
  if (static_cast<int>(plan.stage_layers.size()) == plan.pp) return plan.stage_layers[stage];
  if (accounts_in_split(plan)) {  // a plan the loader did not resolve (a searched one)
    const std::vector<int> layers = accounted_stage_layers(model.layers, plan);
    if (!layers.empty()) return layers[stage];
  }
  return model.layers / plan.pp;
}

std::int64_t chunk_layer_count(const ModelSpec& model, const Plan& plan, int stage, int chunk) {
  return split_chunk_layers(stage_layer_count(model, plan, stage), plan, stage, chunk);
}

std::int64_t chunk_first_layer(const ModelSpec& model, const Plan& plan, int stage, int chunk) {
  if (plan.stage_layers.empty() && !accounts_in_split(plan)) {
    // every stage alike (the search's plans): pp chunks of each earlier round, then this
    // round's chunks of the earlier stages, in closed form
    const std::int64_t per_stage = model.layers / plan.pp;
    const int v = chunks_per_stage(plan);
    const std::int64_t earlier_rounds = chunk * (per_stage / v) + std::min<std::int64_t>(chunk, per_stage % v);
    return plan.pp * earlier_rounds + stage * chunk_layer_count(model, plan, stage, chunk);
  }
  // model chunks in Megatron's order c * pp + i: every chunk of an earlier round, then the
  // earlier stages' chunks of this round
  std::int64_t first = 0;
  for (int c = 0; c <= chunk; ++c)
    for (int i = 0; i < plan.pp && (c < chunk || i < stage); ++i) first += chunk_layer_count(model, plan, i, c);
  return first;
}

StageLayers stage_layers(const ModelSpec& model, const Plan& plan, int stage) {
  const int mirror = dualpipe_mirror_stage(plan, stage);
  if (mirror >= 0) {  // DualPipe: the rank's own stage and its mirror, each a chunk
    const Plan one = one_stage_a_rank(plan);
    StageLayers s = stage_layers(model, one, stage);
    add(s, stage_layers(model, one, mirror));
    return s;
  }
  // every layer alike: only the count matters (the search asks this for every plan)
  if (!model.moe) return {stage_layer_count(model, plan, stage), 0};
  const int v = chunks_per_stage(plan);
  if (v == 1) {
    std::int64_t first = plan.stage_layers.empty() ? stage * (model.layers / plan.pp) : 0;
    for (int i = 0; i < stage && !plan.stage_layers.empty(); ++i) first += plan.stage_layers[i];
    return count_range(model, first, first + stage_layer_count(model, plan, stage));
  }
  StageLayers s;
  for (int j = 0; j < v; ++j) {
    const std::int64_t first = chunk_first_layer(model, plan, stage, j);
    add(s, count_range(model, first, first + chunk_layer_count(model, plan, stage, j)));
  }
  return s;
}

}  // namespace twinsim
