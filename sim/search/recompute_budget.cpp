#include "sim/search/recompute_budget.hpp"

#include <algorithm>
#include <stdexcept>

#include "sim/memory/activations.hpp"
#include "sim/memory/memory_report.hpp"
#include "sim/memory/stage_layers.hpp"
#include "sim/training/layer_costs.hpp"

namespace twinsim {

namespace {

struct PolicyFigures {
  std::int64_t kept = 0;       // bytes one layer keeps per micro-batch
  std::int64_t working = 0;    // what one layer's backward adds, recomputation included (one at a time)
  double time_s = 0;           // recomputing one layer for one micro-batch
};

PolicyFigures figures(const Scenario& base, Recompute policy, bool moe_kind) {
  Scenario s = base;
  s.plan.recompute = policy;
  const TrainingWorkload& t = *s.training;
  const LayerActivations a =
      layer_activations(s.model, s.plan, training_shape(t, s.stack));
  const std::int64_t layer = moe_kind ? some_moe_layer(s.model) : some_dense_layer(s.model);
  const LayerCost cost = cost_layer(s, layer);
  PolicyFigures f;
  f.kept = moe_kind ? a.moe : a.dense;
  f.working = moe_kind ? a.moe_backward : a.dense_backward;
  f.time_s = cost.recompute_s();
  // full recompute runs the layer's forward collectives again (as sim/training/step_graph)
  if (policy == Recompute::full)
    f.time_s += cost.fwd_s(TimeCategory::tp_comm) + cost.fwd_s(TimeCategory::ep_comm);
  return f;
}

}  // namespace

RecomputeMix plan_recompute(const Scenario& s, std::int64_t budget_bytes) {
  if (!s.training) throw std::invalid_argument("plan_recompute needs a training scenario");
  const Plan& plan = s.plan;
  const TrainingWorkload& t = *s.training;
  RecomputeMix r;
  r.budget_bytes = budget_bytes > 0 ? budget_bytes : s.cluster.gpu.memory_bytes;
  const StageLayers stage = stage_layers(s.model, plan, 0);
  const bool moe_kind = stage.moe > stage.dense;
  r.layers = stage.total();
  const PolicyFigures none = figures(s, Recompute::none, moe_kind);
  const PolicyFigures sel = figures(s, Recompute::selective, moe_kind);
  const PolicyFigures full = figures(s, Recompute::full, moe_kind);
  r.kept_none = none.kept, r.kept_selective = sel.kept, r.kept_full = full.kept;
  r.time_selective_s = sel.time_s, r.time_full_s = full.time_s;

  // Everything on the first stage but the layers' own activations: weights, buffers and
  // the embedding's extras (the memory model with zero bytes per layer).
  Scenario none_plan = s;
  none_plan.plan.recompute = Recompute::none;
  const StageMemory base_stage = training_stage_memory(none_plan, 0);
  const std::int64_t extras = stage_extra_activation_bytes(s.model, none_plan.plan, s.stack, t, 0);
  const std::int64_t fixed = base_stage.peak_bytes - base_stage.breakdown.activations + extras;
  const std::int64_t m = std::max<std::int64_t>(1, t.micro_batches(plan.dp));
  const std::int64_t v = plan.schedule == Schedule::interleaved ? plan.virtual_stages : 1;
  const std::int64_t in_flight = chunks_in_flight(plan, 0, m);

  auto cost = [&](std::int64_t n_sel, std::int64_t n_full) {
    const std::int64_t n_none = r.layers - n_sel - n_full;
    const std::int64_t kept = n_none * none.kept + n_sel * sel.kept + n_full * full.kept;
    std::int64_t working = 0;  // the first backward's, one layer at a time: the largest policy's
    if (n_none > 0) working = std::max(working, none.working);
    if (n_sel > 0) working = std::max(working, sel.working);
    if (n_full > 0) working = std::max(working, full.working);
    PolicyCost c;
    c.peak_bytes = fixed + kept * in_flight / v +
                   stage_backward_bytes(s.model, plan, s.stack, t, working, r.layers > 0, 0);
    c.recompute_s = static_cast<double>(m) * (n_sel * sel.time_s + n_full * full.time_s);
    c.fits = c.peak_bytes <= r.budget_bytes;
    return c;
  };
  r.all_none = cost(0, 0);
  r.all_selective = cost(r.layers, 0);
  r.all_full = cost(0, r.layers);
  for (std::int64_t n_full = 0; n_full <= r.layers; ++n_full)
    for (std::int64_t n_sel = 0; n_sel + n_full <= r.layers; ++n_sel) {
      const PolicyCost c = cost(n_sel, n_full);
      if (!c.fits) continue;
      const bool better = !r.feasible || c.recompute_s < r.mix.recompute_s ||
                          (c.recompute_s == r.mix.recompute_s && c.peak_bytes < r.mix.peak_bytes);
      if (!better) continue;
      r.feasible = true;
      r.mix = c;
      r.selective = n_sel, r.full = n_full, r.none = r.layers - n_sel - n_full;
    }
  return r;
}

}  // namespace twinsim
