// The `goodput:` section (SCENARIO.md): failure rates, checkpointing and restart, read into a
// GoodputSpec (hardware/reliability.hpp) that sim/goodput prices.
#include <algorithm>

#include "hardware/failure_rates.hpp"
#include "scenario/errors.hpp"
#include "scenario/mapping_reader.hpp"
#include "scenario/read_sections.hpp"
#include "scenario/suggest.hpp"

namespace twinsim {

namespace {

constexpr double kHoursPerMillion = 1e6;

FailureRates named_rates(const std::string& name, const std::string& path) {
  if (std::optional<FailureRates> r = published_failure_rates(name)) return *r;
  throw ScenarioError(path, name, "is not a published failure-rate set" +
                                      did_you_mean(name, published_failure_rate_names()) + " (known: " + published_failure_rate_list() + ")");
}

// One `<scope>_per_...: {component: rate}` mapping: each component replaces the preset's of
// that name and scope, or joins the set.
void read_components(const YAML::Node& node, const std::string& path, FailureScope scope, double per_hour,
                     FailureRates& rates) {
  MappingReader r(node, path);  // throws unless a mapping
  for (const auto& entry : node) {
    const std::string name = entry.first.Scalar();
    const double rate = r.number(name, 0, 0, 1e9) * per_hour;
    auto same = [&](const ComponentFailureRate& c) { return c.component == name && c.scope == scope; };
    auto it = std::find_if(rates.components.begin(), rates.components.end(), same);
    if (it != rates.components.end()) it->per_hour = rate;
    else rates.components.push_back({name, scope, rate});
  }
}

// `failures: NAME`, or a mapping: `preset: NAME` (optional) plus components per GPU and per
// node in interruptions per million unit-hours, per job in interruptions per day, and the
// planned interruptions per day.
FailureRates read_failures(const YAML::Node& node, const std::string& path) {
  if (!node.IsDefined() || node.IsNull())
    throw ScenarioError(path, "", "is required: a published set (" + published_failure_rate_list() + ") or a mapping of rates");
  if (node.IsScalar()) return named_rates(node.Scalar(), path);
  MappingReader r(node, path);
  FailureRates rates;
  rates.name = "custom";
  if (r.has("preset")) rates = named_rates(r.string("preset", ""), r.key_path("preset"));
  if (r.has("gpu_per_million_hours"))
    read_components(r.child("gpu_per_million_hours"), r.key_path("gpu_per_million_hours"), FailureScope::gpu,
                    1 / kHoursPerMillion, rates);
  if (r.has("node_per_million_hours"))
    read_components(r.child("node_per_million_hours"), r.key_path("node_per_million_hours"), FailureScope::node,
                    1 / kHoursPerMillion, rates);
  if (r.has("job_per_day"))
    read_components(r.child("job_per_day"), r.key_path("job_per_day"), FailureScope::job, 1 / 24.0, rates);
  rates.planned_per_hour = r.number("planned_per_day", rates.planned_per_hour * 24, 0, 1e6) / 24;
  r.reject_unknown();
  if (rates.components.empty() && rates.planned_per_hour == 0)
    throw ScenarioError(path, "", "names no rate: give a preset or at least one component");
  return rates;
}

}  // namespace

GoodputSpec read_goodput(const YAML::Node& node, const std::string& path) {
  MappingReader r(node, path);
  GoodputSpec g;
  g.failures = read_failures(r.child("failures"), r.key_path("failures"));
  // 0: the cluster's share of Llama 3's storage per GPU (hardware/failure_rates.hpp)
  g.storage_write_Bps = r.number("storage_write_GBps", 0, 1e-3, 1e9) * 1e9;
  g.storage_read_Bps = r.number("storage_read_GBps", g.storage_write_Bps / 1e9, 1e-3, 1e9) * 1e9;
  g.async_checkpoint = r.boolean("async_checkpoint", true);
  g.checkpoint_interval_s = r.number("checkpoint_interval_minutes", 0, 1e-3, 1e7) * 60;
  g.restart_s = r.number("restart_minutes", kDefaultRestartMinutes, 0, 1e6) * 60;
  g.rewarm_s = r.number("rewarm_minutes", 0, 0, 1e6) * 60;
  g.train_tokens = r.number("train_tokens", 0, 1, 1e18);
  g.price_per_gpu_hour = r.number("price_per_gpu_hour", 0, 0, 1e9);
  if (r.has("price_per_gpu_hour") && g.train_tokens == 0)
    throw ScenarioError(r.key_path("price_per_gpu_hour"), "", "needs " + r.key_path("train_tokens") + " (the cost is of a whole run)");
  r.reject_unknown();
  return g;
}

}  // namespace twinsim
