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

StageLayers stage_layers(const ModelSpec& model, const Plan& plan, int stage) {
  if (plan.pp < 1 || stage < 0 || stage >= plan.pp) throw std::invalid_argument("stage out of range");
  const int v = plan.schedule == Schedule::interleaved ? std::max(plan.virtual_stages, 1) : 1;
  if (v > 1) {
    const std::int64_t chunk = model.layers / (static_cast<std::int64_t>(plan.pp) * v);
    StageLayers s;
    for (int j = 0; j < v; ++j) {
      const std::int64_t c = static_cast<std::int64_t>(j) * plan.pp + stage;
      add(s, count_range(model, c * chunk, (c + 1) * chunk));
    }
    return s;
  }
  if (static_cast<int>(plan.stage_layers.size()) == plan.pp) {
    std::int64_t first = 0;
    for (int i = 0; i < stage; ++i) first += plan.stage_layers[i];
    return count_range(model, first, first + plan.stage_layers[stage]);
  }
  const std::int64_t per_stage = model.layers / plan.pp;
  return count_range(model, stage * per_stage, (stage + 1) * per_stage);
}

}  // namespace twinsim
