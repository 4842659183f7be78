#pragma once
// One `twinsim serve` run as a library call (the command and the Python module's
// twinsim.serve both make it): the arrivals (seeded Poisson, or a trace file), the
// prefix cache's and speculative decoding's seeds, the simulation, its summary and the
// JSON the command prints.
#include <cstdint>
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "scenario/scenario.hpp"
#include "sim/inference/serving.hpp"
#include "sim/inference/serving_report.hpp"

namespace twinsim {

struct ServeRequest {
  std::int64_t requests = 1000;  // Poisson arrivals of the scenario's prompt and output lengths
  double rate_per_s = 1.0;
  std::uint64_t seed = 0;        // arrivals, prefix-cache hits and speculative acceptance draws
  std::string trace_file;        // non-empty: the arrivals instead (requests, rate and seed unused for them)
  double prefix_hit_rate = 1.0;  // with options.prefix_tokens: every request hits unless told otherwise
  // round_robin | least_loaded: all plan.dp replicas behind a router of that policy; empty:
  // one replica (the figures are one replica's, as before routers existed)
  std::string router;
  ServeOptions options;
};

struct ServeRun {
  ServingResult result;
  ServingSummary summary;
  nlohmann::json json;  // `twinsim serve --json`: the summary, its passes and how requests arrived
};

// Throws ScenarioError for a scenario without an inference section, and what
// simulate_serving and read_request_trace throw.
ServeRun run_serve(const Scenario& s, const ServeRequest& request);

// The command's table (print_serving), and the pools of a disaggregated run.
void print_serve_run(std::ostream& out, const ServeRun& run);

}  // namespace twinsim
