#pragma once
// `serve --engine-bench sglang`: the run as SGLang's `python -m sglang.bench_serving` defines
// and prints it (python/sglang/bench_serving.py, calculate_metrics and benchmark(), at sglang
// commit 0033168f: the block with Backend, Max request concurrency, Concurrency and ITL
// P95/Max; older scripts printed a TPOT block instead, newer ones add peak lines). TTFT, E2E
// latency, ITL and the duration are vLLM's (bench_samples.hpp); where SGLang differs from
// `vllm bench serve`:
//   Input token throughput  total input tokens / duration (vLLM prints none)
//   Concurrency             sum of E2E latencies / duration (mean requests in flight)
//   ITL                     P95 and Max besides mean, median and P99; no TPOT block
//   percentiles             fixed (P99 TTFT; P95, P99 ITL; numpy's linear method)
//   retokenized tokens      = generated tokens (the simulation has tokens, not text)
//   Accept length           speculative decoding's tokens per verify step (only then)
#include <cstdint>
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/inference/bench_report.hpp"

namespace twinsim {

struct SglangBenchMetrics {
  std::int64_t completed = 0, total_input = 0, total_output = 0;
  double duration_s = 0;
  double request_throughput = 0, input_throughput = 0, output_throughput = 0, total_throughput = 0;
  double concurrency = 0;
  double accept_length = 0;  // 0: no speculative decoding, no line
  MetricPercentiles e2el;    // no percentiles
  MetricPercentiles ttft;    // P99
  MetricPercentiles itl;     // P95, P99
  double itl_max_s = 0;
};

SglangBenchMetrics sglang_bench_metrics(const ServingResult& result);

// Its "Serving Benchmark Result" block, line for line (labels, widths, the blank line before).
// `rate_per_s` is printed as Python prints a float (inf for all at once); `max_concurrency`
// 0: "not set".
void print_sglang_bench(std::ostream& out, const SglangBenchMetrics& m, double rate_per_s,
                        std::int64_t max_concurrency);

// The same figures under the names of its result JSON (mean_ttft_ms, p95_itl_ms, ...).
nlohmann::json to_json(const SglangBenchMetrics& m);

// A double as Python's str() writes it: shortest round trip, "4.0", "0.5", "1e-05", "inf".
std::string python_float_str(double v);

}  // namespace twinsim
