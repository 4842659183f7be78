#include "sim/search/search_json.hpp"

#include "sim/goodput/goodput_report.hpp"

#include <nlohmann/json.hpp>

#include "models/plan_fields.hpp"
#include "models/report_schema.hpp"

namespace twinsim {

namespace {

// One knob's value as JSON (models/plan_fields.hpp).
nlohmann::json knob_json(const IntKnob& k, const PlanKnobs& p) { return p.*k.member; }
nlohmann::json knob_json(const BoolKnob& k, const PlanKnobs& p) { return p.*k.member; }
nlohmann::json knob_json(const RatioKnob& k, const PlanKnobs& p) { return p.*k.member; }
nlohmann::json knob_json(const LayerListKnob& k, const Plan& p) { return p.*k.member; }
nlohmann::json knob_json(const ModuleSetKnob& k, const PlanKnobs& p) {
  nlohmann::json names = nlohmann::json::array();
  for (RecomputeModule m : kRecomputeModules)
    if ((p.*k.member >> static_cast<int>(m)) & 1u) names.push_back(std::string(to_string(m)));
  return names;
}
template <class E>
nlohmann::json knob_json(const ChoiceKnob<E>& k, const PlanKnobs& p) {
  return knob_text(k, p);
}

}  // namespace

nlohmann::json to_json(const Plan& plan) {
  nlohmann::json j = nlohmann::json::object();
  for_each_plan_knob([&](const auto& knob) { j[std::string(knob.key)] = knob_json(knob, plan); });
  return j;
}

nlohmann::json to_json(const Candidate& c, const Plan& scenario) {
  nlohmann::json j = {{"gpus", c.gpus()}, {"micro_batch", c.micro_batch}, {"overrides", to_overrides(c, scenario)}};
  for_each_searched_knob([&](const auto& knob) { j[std::string(knob.key)] = knob_json(knob, c); });
  return j;
}

nlohmann::json to_json(const SearchResult& r, Objective objective) {
  nlohmann::json top = nlohmann::json::array(), pareto = nlohmann::json::array();
  const auto plan_json = [&](const Candidate& c) {
    nlohmann::json j = to_json(c, r.scenario_plan);
    const std::string stack(r.stack_of(c));
    if (r.stack_is_default) j["overrides"] = j["overrides"].get<std::string>() + " stack=" + stack;
    j["stack"] = stack;  // what the plan was priced on
    return j;
  };
  for (std::size_t i = 0; i < r.top.size(); ++i) {
    const SearchEntry& e = r.top[i];
    nlohmann::json j = {{"plan", plan_json(e.plan)},
                        {"analytic_step_s", e.analytic.step_s},
                        {"peak_bytes", e.memory_peak_bytes},
                        {"score", e.score}};
    if (e.simulated) {
      j["simulated_step_s"] = e.simulated_step_s;
      j["step_s_interval"] = e.step_s_interval;
    }
    if (i < r.top_goodput.size()) j["goodput"] = to_json(r.top_goodput[i]);
    top.push_back(j);
  }
  for (const ParetoPoint& p : r.pareto)
    pareto.push_back({{"plan", plan_json(p.plan)}, {"analytic_step_s", p.step_s}, {"peak_bytes", p.peak_bytes}});
  return {{kSchemaVersionKey, kReportSchemaVersion},
          {"objective", std::string(to_string(objective))},
          {"candidates", r.candidates},
          {"fitting", r.fitting},
          {"rejected_by_validator", r.rejected_by_validator},
          {"analytic_s", r.analytic_s},
          {"confirm_s", r.confirm_s},
          {"top", top},
          {"pareto", pareto}};
}

namespace {

nlohmann::json policy_json(const PolicyCost& p) {
  return {{"peak_bytes", p.peak_bytes}, {"recompute_s", p.recompute_s}, {"fits", p.fits}};
}

}  // namespace

nlohmann::json to_json(const RecomputeMix& r) {
  return {{kSchemaVersionKey, kReportSchemaVersion},
          {"budget_bytes", r.budget_bytes},
          {"layers", r.layers},
          {"feasible", r.feasible},
          {"mix", {{"none", r.none}, {"selective", r.selective}, {"full", r.full}}},
          {"mix_cost", policy_json(r.mix)},
          {"all_none", policy_json(r.all_none)},
          {"all_selective", policy_json(r.all_selective)},
          {"all_full", policy_json(r.all_full)}};
}

nlohmann::json to_json(const CapacityRequest& r, const CapacityPlan& p) {
  nlohmann::json j = {{kSchemaVersionKey, kReportSchemaVersion},
                      {"model", r.model},
                      {"gpu", r.gpu},
                      {"tokens", r.tokens},
                      {"days_budget", r.days},
                      {"params", p.params},
                      {"flops_6nt", p.flops_6nt},
                      {"steps", p.steps},
                      {"feasible", p.feasible},
                      {"gpus", p.gpus},
                      {"node_type", p.node_type},
                      {"plan", to_json(p.plan, p.scenario_plan)},
                      {"stack", p.stack},
                      {"step_s", p.step_s},
                      {"analytic_step_s", p.analytic_step_s},
                      {"peak_bytes", p.peak_bytes},
                      {"days", p.days},
                      {"days_6nt", p.days_6nt},
                      {"mfu", p.mfu},
                      {"gpu_hours", p.gpu_hours},
                      {"cost", p.cost},
                      {"step_s_interval", p.step_s_interval},
                      {"interval_regime", p.interval_regime},
                      {"gpus_at_slow_end", p.gpus_at_slow_end},
                      {"days_at_slow_end", p.days_at_slow_end}};
  if (p.goodput) {  // with failures: days, GPU-hours and cost above include them
    j["failure_free_days"] = p.failure_free_days;
    j["goodput"] = to_json(*p.goodput);
  }
  return j;
}

}  // namespace twinsim

namespace twinsim {

namespace {

nlohmann::json deployment_json(const ServingDeployment& d) {
  nlohmann::json j = {{"tp", d.tp}, {"replicas", d.replicas}, {"gpus", d.gpus()},
                      {"ttft_p99_s", d.ttft_p99_s}, {"tpot_p99_s", d.tpot_p99_s}, {"disaggregated", d.disaggregated}};
  if (d.disaggregated) j["prefill"] = {{"tp", d.prefill_tp}, {"replicas", d.prefill_replicas}};
  return j;
}

}  // namespace

nlohmann::json to_json(const ServingCapacityRequest& r, const ServingCapacityPlan& p) {
  nlohmann::json tried = nlohmann::json::array();
  for (const ServingDeployment& d : p.tried) tried.push_back(deployment_json(d));
  nlohmann::json j = {{kSchemaVersionKey, kReportSchemaVersion},
                      {"model", r.model},
                      {"gpu", r.gpu},
                      {"node_type", p.node_type},
                      {"stack", p.stack},
                      {"rate_per_s", r.rate_per_s},
                      {"ttft_p99_target_s", r.ttft_p99_s},
                      {"feasible", p.best.has_value()},
                      {"tried", tried}};
  if (r.tpot_p99_s > 0) j["tpot_p99_target_s"] = r.tpot_p99_s;
  if (r.prefix_tokens > 0) j["prefix_cache"] = {{"prefix_tokens", r.prefix_tokens}, {"hit_rate", r.prefix_hit_rate}};
  if (r.speculative) {
    j["speculative"] = {{"method", to_string(r.speculative->method)}, {"tokens", r.speculative->tokens},
                        {"acceptance_rate", r.speculative->acceptance_rate}};
    if (r.speculative->draft_model) j["speculative"]["draft_model"] = r.speculative->draft_model->name;
  }
  if (p.best) j["deployment"] = deployment_json(*p.best);
  return j;
}

}  // namespace twinsim
