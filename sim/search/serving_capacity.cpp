#include "sim/search/serving_capacity.hpp"

#include <stdexcept>

#include "scenario/build.hpp"
#include "scenario/default_stack.hpp"
#include "scenario/errors.hpp"
#include "sim/inference/disaggregated.hpp"
#include "sim/inference/kv_cache.hpp"
#include "sim/inference/requests.hpp"
#include "sim/inference/serving.hpp"
#include "sim/inference/serving_report.hpp"

namespace twinsim {

namespace {

// One replica of tp GPUs serving the model; none when tp does not split it. With
// `disaggregated`, a decode replica of tp beside prefill replicas of prefill_tp.
std::optional<Scenario> replica(const ServingCapacityRequest& r, int tp,
                                std::optional<Disaggregation> disaggregated = std::nullopt) {
  Scenario s;
  s.model = r.model_spec;
  s.cluster = r.node;
  s.plan.tp = tp;
  InferenceWorkload w;
  w.prompt_len = r.prompt_len;
  w.output_len = r.output_len;
  w.batch = 1;
  w.disaggregation = disaggregated;
  w.speculative = r.speculative;
  s.inference = w;
  try {
    s = validated_scenario(s);
    apply_default_stack(s);  // as a scenario naming no stack: the serving engine a user runs
    return s;
  } catch (const ScenarioError&) {
    return std::nullopt;  // tp does not split this model
  }
}

// Every candidate is simulated alike: latencies only, the workload's prefix caching, the
// engine's KV block size (its stack's, as `serve` takes it).
ServeOptions serve_options(const ServingCapacityRequest& r, const Scenario& s) {
  ServeOptions o;
  o.kv.block_tokens = engine_block_tokens(s.stack);
  o.keep_occupancy = false;  // only the latencies are read
  o.prefix_tokens = r.prefix_tokens;
  o.prefix_hit_rate = r.prefix_hit_rate;
  o.prefix_seed = 1;
  return o;
}

bool meets(const ServingCapacityRequest& r, const ServingDeployment& d) {
  return d.ttft_p99_s <= r.ttft_p99_s && (r.tpot_p99_s <= 0 || d.tpot_p99_s <= r.tpot_p99_s);
}

bool smaller(const ServingDeployment& d, const std::optional<ServingDeployment>& best) {
  return !best || d.gpus() < best->gpus();
}

// Simulates deployment `d` (`serve` runs it), records its p99 latencies in plan.tried and
// keeps it as the best when it meets the targets; none when it cannot run (no room for the
// KV cache).
template <class Serve>
std::optional<ServingDeployment> try_deployment(const ServingCapacityRequest& r, ServingCapacityPlan& plan,
                                                ServingDeployment d, const Serve& serve) {
  try {
    const ServingSummary sum = summarize(serve());
    d.ttft_p99_s = sum.ttft.p99_s, d.tpot_p99_s = sum.tpot.p99_s;
  } catch (const std::invalid_argument&) {
    return std::nullopt;
  }
  plan.tried.push_back(d);
  if (meets(r, d)) plan.best = d;
  return d;
}

// Colocated: TP doubles from 1 to a node; for each, replicas (each serving rate / replicas
// of the stream) grow until the targets are met or a smaller deployment is already known.
void try_colocated(const ServingCapacityRequest& r, ServingCapacityPlan& plan, int gpus_per_node) {
  for (int tp = 1; tp <= gpus_per_node; tp *= 2) {
    const std::optional<Scenario> s = replica(r, tp);
    if (!s) continue;
    for (int replicas = 1; replicas <= r.max_replicas; ++replicas) {
      if (!smaller(ServingDeployment{tp, replicas}, plan.best)) break;
      const auto requests = poisson_requests(r.requests, r.rate_per_s / replicas, 1, r.prompt_len, r.output_len);
      const auto d =
          try_deployment(r, plan, {tp, replicas}, [&] { return simulate_serving(*s, requests, serve_options(r, *s)); });
      if (!d || meets(r, *d)) break;  // no room for the KV cache at this tp, or done
    }
  }
}

// Disaggregated: for each prefill TP and decode TP, one replica of each to start; while the
// TTFT target fails a prefill replica is added (TTFT is the prefill pool's), while the
// TPOT target fails a decode replica, until both are met or a smaller deployment is known.
void try_disaggregated(const ServingCapacityRequest& r, ServingCapacityPlan& plan, int gpus_per_node) {
  const auto requests = poisson_requests(r.requests, r.rate_per_s, 1, r.prompt_len, r.output_len);
  for (int prefill_tp = 1; prefill_tp <= gpus_per_node; prefill_tp *= 2)
    for (int tp = 1; tp <= gpus_per_node; tp *= 2) {
      Disaggregation pools;
      pools.prefill_tp = prefill_tp;
      while (pools.prefill_replicas <= r.max_replicas && pools.decode_replicas <= r.max_replicas) {
        const ServingDeployment pending{tp, pools.decode_replicas, 0, 0, true, prefill_tp, pools.prefill_replicas};
        if (!smaller(pending, plan.best)) break;
        const std::optional<Scenario> s = replica(r, tp, pools);
        if (!s) break;  // a TP that does not split the model
        const auto d = try_deployment(
            r, plan, pending, [&] { return simulate_disaggregated(*s, requests, serve_options(r, *s)).result; });
        if (!d || meets(r, *d)) break;  // no room for the KV cache on one of the pools, or done
        if (d->ttft_p99_s > r.ttft_p99_s) ++pools.prefill_replicas;
        else ++pools.decode_replicas;
      }
    }
}

}  // namespace

ServingCapacityPlan plan_serving_capacity(const ServingCapacityRequest& r) {
  if (!(r.rate_per_s > 0)) throw ScenarioError("--rate", std::to_string(r.rate_per_s), "must be positive with --serve");
  if (!(r.ttft_p99_s > 0))
    throw ScenarioError("--ttft-p99", std::to_string(r.ttft_p99_s), "must be positive with --serve");
  if (r.tpot_p99_s < 0) throw ScenarioError("--tpot-p99", std::to_string(r.tpot_p99_s), "must be positive");
  ServingCapacityPlan plan;
  plan.node_type = r.node.name;
  if (const std::optional<Scenario> one = replica(r, 1)) plan.stack = one->stack.name;
  const int gpus_per_node = r.node.gpus_per_node;
  try_colocated(r, plan, gpus_per_node);
  if (r.disaggregate) try_disaggregated(r, plan, gpus_per_node);
  return plan;
}

}  // namespace twinsim
