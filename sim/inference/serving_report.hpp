#pragma once
// What `twinsim serve` reports: latency percentiles, throughput, KV occupancy over time.
#include <ostream>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "sim/inference/serving.hpp"

namespace twinsim {

// Percentile `q` in [0, 100] by linear interpolation between order statistics
// (numpy.percentile's default "linear" method); 0 for an empty sample.
double latency_percentile(std::vector<double> values, double q);

struct LatencyStats {
  double mean_s = 0, p50_s = 0, p90_s = 0, p99_s = 0;
};
LatencyStats latency_stats(const std::vector<double>& values);

struct ServingSummary {
  std::int64_t requests = 0;
  double duration_s = 0;  // first arrival to last finish
  LatencyStats ttft;      // first token - arrival
  LatencyStats tpot;      // (finish - first token) / (output_len - 1), requests with output_len > 1
  LatencyStats e2e;       // finish - arrival
  double output_tokens_per_s = 0;
  double requests_per_s = 0;
  double mean_kv_occupancy = 0;  // time-weighted used / total blocks
  double peak_kv_occupancy = 0;
  std::int64_t preemptions = 0;
  std::int64_t passes = 0;
  std::int64_t prompt_tokens = 0;         // all requests' prompts
  std::int64_t cached_prompt_tokens = 0;  // of them: found in the prefix cache, not computed
};

// The metrics of vLLM's benchmarks/benchmark_serving.py (TTFT, TPOT excluding the first token).
ServingSummary summarize(const ServingResult& result);

nlohmann::json to_json(const ServingSummary& s, const ServingResult& result);

// time_s,used_blocks,total_blocks,occupancy,running,waiting: one row per pass.
void write_occupancy_csv(std::ostream& out, const ServingResult& result);

// request,arrival_s,prompt_len,output_len,first_token_s,finish_s,ttft_s,preemptions: one row per
// request, in request order (a benchmark client's per-request record, e.g. vLLM's saved `ttfts`).
void write_requests_csv(std::ostream& out, const ServingResult& result);

void print_serving(std::ostream& out, const ServingSummary& s, const ServingResult& result);

}  // namespace twinsim
