#include "sim/search/serving_capacity.hpp"

#include <stdexcept>

#include "scenario/build.hpp"
#include "scenario/errors.hpp"
#include "scenario/load.hpp"
#include "sim/inference/requests.hpp"
#include "sim/inference/serving.hpp"
#include "sim/inference/serving_report.hpp"
#include "sim/search/capacity.hpp"

namespace twinsim {

namespace {

// One replica of tp GPUs serving the model; none when tp does not split it.
std::optional<Scenario> replica(const ServingCapacityRequest& r, const std::string& node, int tp) {
  Scenario s;
  s.model = catalog_model(r.model);
  s.cluster = catalog_cluster(node);
  s.plan.tp = tp;
  InferenceWorkload w;
  w.prompt_len = r.prompt_len;
  w.output_len = r.output_len;
  w.batch = 1;
  s.inference = w;
  try {
    return validated_scenario(s);
  } catch (const ScenarioError&) {
    return std::nullopt;  // tp does not split this model
  }
}

}  // namespace

ServingCapacityPlan plan_serving_capacity(const ServingCapacityRequest& r) {
  if (!(r.rate_per_s > 0)) throw ScenarioError("--rate", std::to_string(r.rate_per_s), "must be positive with --serve");
  if (!(r.ttft_p99_s > 0))
    throw ScenarioError("--ttft-p99", std::to_string(r.ttft_p99_s), "must be positive with --serve");
  ServingCapacityPlan plan;
  plan.node_type = node_type_for_gpu(r.gpu);
  const ClusterSpec cluster = catalog_node(plan.node_type);
  for (int tp = 1; tp <= cluster.gpus_per_node; tp *= 2) {
    const std::optional<Scenario> s = replica(r, plan.node_type, tp);
    if (!s) continue;
    for (int replicas = 1; replicas <= r.max_replicas; ++replicas) {
      if (plan.best && static_cast<std::int64_t>(tp) * replicas >= plan.best->gpus()) break;
      const auto requests = poisson_requests(r.requests, r.rate_per_s / replicas, 1, r.prompt_len, r.output_len);
      ServeOptions options;
      options.keep_occupancy = false;  // only the TTFT is read
      double p99 = 0;
      try {
        p99 = summarize(simulate_serving(*s, requests, options)).ttft.p99_s;
      } catch (const std::invalid_argument&) {
        break;  // weights leave no room for the KV cache at this tp
      }
      plan.tried.push_back({tp, replicas, p99});
      if (p99 <= r.ttft_p99_s) {
        plan.best = plan.tried.back();
        break;
      }
    }
  }
  return plan;
}

}  // namespace twinsim
