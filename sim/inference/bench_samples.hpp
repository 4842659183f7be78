#pragma once
// A serving run's completed requests as a benchmark client records them: the one home of the
// per-request figures that vLLM's `vllm bench serve`, SGLang's bench_serving and trtllm-bench
// all start from (bench_report.hpp, bench_sglang.hpp, bench_trtllm.hpp). The client's clock
// starts when it sends a request: its arrival (with --max-concurrency, when a slot freed).
#include <cstdint>
#include <vector>

#include "sim/inference/serving.hpp"

namespace twinsim {

struct BenchSample {
  std::int64_t prompt_len = 0, output_len = 0;
  double ttft_s = 0;  // first token - arrival
  double e2el_s = 0;  // finish - arrival
};

struct BenchSamples {
  std::vector<BenchSample> requests;  // the completed ones, in request order
  std::int64_t total_input = 0, total_output = 0;
  double duration_s = 0;  // the first arrival to the last finish
};

BenchSamples bench_samples(const ServingResult& result);

// Requests in flight on average: the sum of E2E latencies over the duration (SGLang's
// "Concurrency", trtllm-bench's "Number of concurrent requests"); 0 for an empty run.
double mean_requests_in_flight(const BenchSamples& s);

}  // namespace twinsim
