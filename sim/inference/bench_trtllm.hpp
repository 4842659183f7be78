#pragma once
// `serve --engine-bench trtllm`: the run as TensorRT-LLM's `trtllm-bench throughput
// --streaming` defines and prints it (tensorrt_llm/bench/dataclasses/statistics.py,
// RequestRecord, PercentileStats and BenchmarkStatistics; reporting.py, report_statistics:
// its REQUEST DETAILS and PERFORMANCE OVERVIEW sections). Per request, from its send (arrival)
// and its N output tokens (the first included), where trtllm-bench differs from vLLM:
//   TPOT          (finish - first token) / (N - 1); 0 when N = 1, and averaged with the rest
//   per-user output throughput [w/ ctx]   N / E2E latency, averaged over the requests
//   per-user output speed (GTPS)          (N - 1) / (E2E latency - TTFT), averaged
//   percentiles   sorted[int(n q)] (no interpolation), with minimum, maximum, average
//   concurrent requests   sum of E2E latencies / total latency (the first send to the last finish)
//   per-GPU output throughput             output throughput / the run's GPUs
// The engine, machine, world and dataset sections describe a run's setup, not its results,
// and are left out; so are the draft-token statistics of speculative decoding.
#include <cstdint>
#include <ostream>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/inference/serving.hpp"

namespace twinsim {

// PercentileStats.from_iterable: P50, P90, P95, P99 as sorted[int(n q)]; all zero when empty.
struct TrtllmPercentiles {
  double p50 = 0, p90 = 0, p95 = 0, p99 = 0, minimum = 0, maximum = 0, average = 0;
};
TrtllmPercentiles trtllm_percentiles(std::vector<double> values);

struct TrtllmBenchMetrics {
  std::int64_t requests = 0, total_input = 0, total_output = 0;
  std::int64_t gpus = 1;       // the GPUs the run served on (its world size)
  double total_latency_s = 0;  // the first send to the last finish
  double request_throughput = 0, output_throughput = 0, total_token_throughput = 0;
  double concurrent_requests = 0;
  TrtllmPercentiles latency_s, ttft_s, tpot_s;
  TrtllmPercentiles output_per_user;  // N / E2E latency, tokens/s
  TrtllmPercentiles gen_tps;          // (N - 1) / (E2E latency - TTFT), tokens/s
};

TrtllmBenchMetrics trtllm_bench_metrics(const ServingResult& result, std::int64_t gpus);

// REQUEST DETAILS, then PERFORMANCE OVERVIEW with its streaming lines, line for line.
void print_trtllm_bench(std::ostream& out, const TrtllmBenchMetrics& m);

// The same figures as its --report_json's request_info, performance and streaming_metrics.
nlohmann::json to_json(const TrtllmBenchMetrics& m);

}  // namespace twinsim
