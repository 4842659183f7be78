#pragma once
// Prefill/decode disaggregation (inference.disaggregation; DistServe, Zhong et al. 2024;
// Splitwise, Patel et al. 2024): a pool of prefill replicas runs the prompts and samples
// each request's first token, the prompt's K,V goes over the network to a pool of decode
// replicas, which generate the rest. Each pool is simulated with the serving loop
// (serving.hpp): requests go round-robin to the prefill replicas in arrival order (a
// router's default), then to the decode replicas in the order their K,V arrives. The pools
// are simulated one after the other: a decode pool that falls behind does not hold the
// prefill pool back (its queue grows instead), as in DistServe's simulator (§4.2).
#include <cstdint>
#include <vector>

#include "scenario/scenario.hpp"
#include "sim/inference/serving.hpp"

namespace twinsim {

// A prefill replica: the scenario with prefill_tp, no disaggregation and no speculation
// (speculation is a decode technique); a decode replica: the scenario's own plan.
Scenario prefill_replica(const Scenario& s);
Scenario decode_replica(const Scenario& s);

// Sending one request's prompt K,V (prompt_tokens) from a prefill replica to a decode
// replica: the whole model's K,V of those tokens, split over the prefill replica's GPUs,
// each sending its share at once over its own link (the NICs across nodes, or NVLink with
// kv_link: intra_node), as one send_recv each (sim/cost/collective_cost).
double kv_transfer_s(const Scenario& s, std::int64_t prompt_tokens);

struct DisaggregatedServing {
  ServingResult result;              // every request: first token from its prefill replica, finish from its decode one
  std::vector<double> transfer_s;    // per request, its K,V transfer
  std::int64_t prefill_gpus = 0, decode_gpus = 0;
};

// Throws what simulate_serving throws for either pool.
DisaggregatedServing simulate_disaggregated(const Scenario& s, const std::vector<Request>& requests,
                                           const ServeOptions& options);

}  // namespace twinsim
