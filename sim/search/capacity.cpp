#include "sim/search/capacity.hpp"

#include <cmath>
#include <limits>
#include <optional>

#include "hardware/failure_rates.hpp"
#include "models/param_count.hpp"
#include "scenario/build.hpp"
#include "scenario/default_stack.hpp"
#include "scenario/errors.hpp"
#include "sim/search/candidate.hpp"
#include "sim/training/training_report.hpp"
#include "sim/trust/prediction_interval.hpp"

namespace twinsim {

std::optional<GoodputSpec> capacity_goodput(const CapacityFailures& f, const std::string& field) {
  if (f.rates == "none") return std::nullopt;
  const std::optional<FailureRates> rates = published_failure_rates(f.rates);
  if (!rates)
    throw ScenarioError(field, f.rates, "is not a published failure-rate set (" + published_failure_rate_list() + ") or none");
  // negative numbers mean nothing here; 0 keeps a default (Llama 3's storage, Young/Daly)
  if (!(f.storage_GBps >= 0)) throw ScenarioError("storage_GBps", std::to_string(f.storage_GBps), "must be >= 0");
  if (!(f.restart_minutes >= 0))
    throw ScenarioError("restart_minutes", std::to_string(f.restart_minutes), "must be >= 0");
  if (!(f.interval_minutes >= 0))
    throw ScenarioError("checkpoint_interval_minutes", std::to_string(f.interval_minutes), "must be >= 0");
  GoodputSpec g;
  g.failures = *rates;
  g.storage_write_Bps = g.storage_read_Bps = f.storage_GBps * 1e9;
  g.restart_s = f.restart_minutes * 60;
  g.checkpoint_interval_s = f.interval_minutes * 60;
  g.async_checkpoint = !f.sync_checkpoint;
  return g;
}

Scenario capacity_scenario(const CapacityRequest& r) {
  Scenario s;
  s.name = "capacity-" + r.model;
  s.model = r.model_spec;
  s.cluster = r.node;
  TrainingWorkload t;  // bf16 + Adam, one sequence per micro-batch: the search varies the rest
  t.seq_len = r.seq_len;
  t.global_batch = r.global_batch;
  t.micro_batch = 1;
  t.precision = Dtype::bf16;
  t.optimizer = Optimizer::adam;
  s.training = t;
  s = validated_scenario(s);  // plan: one GPU, tp = pp = dp = 1
  apply_default_stack(s);     // as a scenario naming no stack: each candidate then gets its plan's own
  return s;
}

namespace {

// The goodput's share of wall-clock time a plan trains in: 1 without failures.
double effective_ratio(const CapacityRequest& r, const Scenario& s, double step_s) {
  return r.goodput ? predict_goodput(s, *r.goodput, step_s).prediction.ettr : 1.0;
}

// Seconds to train at `step_s` a step, failures included; infinite when the run never finishes.
double wall_s(const CapacityRequest& r, const Scenario& s, std::int64_t steps, double step_s) {
  const double ettr = effective_ratio(r, s, step_s);
  return ettr > 0 ? static_cast<double>(steps) * step_s / ettr : std::numeric_limits<double>::infinity();
}

struct Choice {
  ParetoPoint point;
  Scenario scenario;
  TrainingPrediction sim;
  trust::TrustInterval interval;
};

// The front holds each GPU count's fastest fitting plan (a faster plan on fewer GPUs would be
// better anyway). Walk it by GPU count; the first plan whose estimate meets the budget (failures
// included) is simulated, and kept if its simulated step meets it too (at most 16 tries);
// `slow_end`: the step read at its 80% trust interval's slow end (sim/trust/).
std::optional<Choice> first_in_budget(const CapacityRequest& r, const Scenario& base, const AnalyticPass& pass,
                                      std::int64_t steps, double budget_s, bool slow_end) {
  int tries = 0;
  for (const ParetoPoint& p : pass.pareto.sorted()) {
    if (static_cast<double>(steps) * p.step_s > budget_s) continue;  // too slow even without failures
    const Scenario s = candidate_scenario(base, p.plan);
    if (wall_s(r, s, steps, p.step_s) > budget_s) continue;
    if (++tries > 16) break;
    Choice c{p, s, predict_training(s), {}};
    c.interval = trust::step_interval(s, c.sim);
    const double step = slow_end ? c.interval.high : c.sim.step_s;
    if (wall_s(r, s, steps, step) <= budget_s) return c;
  }
  return std::nullopt;
}

}  // namespace

CapacityPlan plan_capacity(const CapacityRequest& r) {
  if (r.tokens <= 0) throw ScenarioError("--tokens", std::to_string(r.tokens), "must be positive");
  if (r.days <= 0) throw ScenarioError("--days", std::to_string(r.days), "must be positive");
  const Scenario base = capacity_scenario(r);
  CapacityPlan out;
  out.node_type = base.cluster.name;
  out.scenario_plan = base.plan;
  out.params = count_params(base.model).total;
  out.flops_6nt = 6.0 * static_cast<double>(out.params) * r.tokens;  // Kaplan et al. 2020 §2.1
  const double tokens_per_step = static_cast<double>(r.global_batch * r.seq_len);
  out.steps = static_cast<std::int64_t>(std::ceil(r.tokens / tokens_per_step));
  const double budget_s = r.days * 86400.0;

  SearchOptions o;
  o.space.min_gpus = 1;
  o.space.max_gpus = r.max_gpus;
  o.space.max_micro_batch = r.max_micro_batch;
  o.simulate = false;
  const AnalyticPass pass = run_analytic_pass(base, o, 1);
  const std::optional<Choice> predicted = first_in_budget(r, base, pass, out.steps, budget_s, false);
  if (!predicted) return out;
  const Choice& c = *predicted;
  out.feasible = true;
  out.gpus = c.point.gpus;
  out.plan = c.point.plan;
  out.stack = c.scenario.stack.name;
  out.analytic_step_s = c.point.step_s;
  out.peak_bytes = c.point.peak_bytes;
  out.step_s = c.sim.step_s;
  out.mfu = c.sim.throughput.mfu;
  out.failure_free_days = static_cast<double>(out.steps) * c.sim.step_s / 86400.0;
  out.days = wall_s(r, c.scenario, out.steps, c.sim.step_s) / 86400.0;
  if (r.goodput) {
    GoodputSpec spec = *r.goodput;
    spec.train_tokens = r.tokens, spec.price_per_gpu_hour = r.price_per_gpu_hour;
    out.goodput = predict_goodput(c.scenario, spec, c.sim.step_s);
  }
  const double rate = c.sim.throughput.model_tflops_per_gpu * 1e12 * static_cast<double>(out.gpus);
  out.days_6nt = rate > 0 ? out.flops_6nt / rate / 86400.0 : 0;
  out.gpu_hours = out.days * 24.0 * static_cast<double>(out.gpus);
  out.cost = out.gpu_hours * r.price_per_gpu_hour;
  out.step_s_interval = {c.interval.low, c.interval.high};
  out.interval_regime = c.interval.regime;
  // what it takes if every plan's step lands at its interval's slow end (failures included)
  if (const std::optional<Choice> slow = first_in_budget(r, base, pass, out.steps, budget_s, true)) {
    out.gpus_at_slow_end = slow->point.gpus;
    out.days_at_slow_end = wall_s(r, slow->scenario, out.steps, slow->interval.high) / 86400.0;
  }
  return out;
}

}  // namespace twinsim
