#pragma once
// `twinsim capacity --serve`: the smallest serving deployment (TP x replicas, one replica
// per TP group, the stream shared evenly: plan.dp replicas serve independent streams,
// sim/inference/serving.hpp) whose simulated p99 time to first token (and, when given, p99
// time per output token) meets its target at a request rate. TP doubles from 1 to a node;
// for each, replicas grow until the targets are met or a smaller deployment is already
// known. With `disaggregate`, prefill/decode disaggregated deployments
// (sim/inference/disaggregated.hpp) compete too: for each prefill TP and decode TP, the
// pool whose target fails grows by a replica; ties in GPUs go to the colocated deployment,
// tried first.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "scenario/scenario.hpp"

namespace twinsim {

struct ServingCapacityRequest {
  std::string model, gpu;  // catalog names (for the report)
  double rate_per_s = 0;   // Poisson arrivals (seed 1), shared by the replicas
  double ttft_p99_s = 0;   // the target
  std::int64_t prompt_len = 1024, output_len = 256;
  std::int64_t requests = 300;  // simulated per deployment
  int max_replicas = 64;       // per pool
  double tpot_p99_s = 0;       // 0: no TPOT target
  // prefix caching (serve --prefix-tokens): every prompt opens with the same prefix_tokens
  // and a share prefix_hit_rate finds them cached; 0: none
  std::int64_t prefix_tokens = 0;
  double prefix_hit_rate = 1.0;
  // speculative decoding on every candidate (inference.speculative); none: plain decoding
  std::optional<SpeculativeDecoding> speculative;
  bool disaggregate = false;   // also try prefill/decode disaggregated deployments
  // resolved by the caller (scenario/load.hpp: catalog_model, catalog_cluster_for_gpu)
  ModelSpec model_spec;
  ClusterSpec node;
};

struct ServingDeployment {
  int tp = 1, replicas = 1;  // disaggregated: the decode pool's
  double ttft_p99_s = 0;
  double tpot_p99_s = 0;
  bool disaggregated = false;
  int prefill_tp = 0, prefill_replicas = 0;  // disaggregated only
  std::int64_t gpus() const {
    return static_cast<std::int64_t>(tp) * replicas + static_cast<std::int64_t>(prefill_tp) * prefill_replicas;
  }
};

struct ServingCapacityPlan {
  std::string node_type;
  std::string stack;                     // the serving engine every candidate was simulated on (the workload's default)
  std::vector<ServingDeployment> tried;  // in the order simulated
  std::optional<ServingDeployment> best;  // the smallest meeting the target; none: infeasible
};

// Throws ScenarioError for a rate or target that is not positive.
ServingCapacityPlan plan_serving_capacity(const ServingCapacityRequest& r);

}  // namespace twinsim
