#pragma once
// `twinsim serve --engine-bench`: the serving run's figures as the engines' own benchmark
// scripts define and print them, so a simulated run lines up with a measured one column by
// column. This file: vLLM's block (the default; SGLang's is bench_sglang.hpp, trtllm-bench's
// bench_trtllm.hpp, the engine picked by bench_engine.hpp). Definitions (vLLM's
// vllm/benchmarks/serve.py, calculate_metrics; SGLang's bench_serving.py shares them):
//   TTFT  first token - arrival, per request
//   TPOT  (latency - TTFT) / (output tokens - 1), per request with more than one output token
//   ITL   every gap between successive outputs of a request (a speculative run as one), pooled
//   E2EL  latency: finish - arrival
//   duration: the first arrival to the last finish; throughputs are totals over it
//   goodput: requests meeting every SLO given (TTFT, TPOT, E2EL <= their bound) per second
// Percentiles by numpy's default (linear) method, as both scripts take them.
#include <ostream>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "sim/inference/serving.hpp"

namespace twinsim {

// Service-level objectives (vLLM's --goodput ttft:MS tpot:MS e2el:MS); 0: not set.
struct ServingSlo {
  double ttft_s = 0, tpot_s = 0, e2el_s = 0;
  bool any() const { return ttft_s > 0 || tpot_s > 0 || e2el_s > 0; }
};

struct MetricPercentiles {
  double mean_s = 0, median_s = 0;
  std::vector<double> percentile_s;  // one per BenchMetrics::percentiles
};

struct BenchMetrics {
  std::int64_t completed = 0;
  double duration_s = 0;
  std::int64_t total_input = 0, total_output = 0;
  double request_throughput = 0, output_throughput = 0, total_token_throughput = 0;
  double request_goodput = 0;  // with SLOs
  std::vector<double> percentiles;  // e.g. {99} (vLLM's default --metric-percentiles)
  MetricPercentiles ttft, tpot, itl, e2el;
};

// Mean, median (numpy's) and the percentiles `qs` of `values`; all zero when it is empty.
MetricPercentiles metric_percentiles(const std::vector<double>& values, const std::vector<double>& qs);

// `itl_s` may be empty (a run that kept no gaps): ITL is then all zero.
BenchMetrics bench_metrics(const ServingResult& result, const std::vector<double>& percentiles, const ServingSlo& slo);

// vLLM's "Serving Benchmark Result" block, line for line (its labels and widths);
// `max_concurrency` > 0: the client's cap, printed as vLLM prints its --max-concurrency.
void print_vllm_bench(std::ostream& out, const BenchMetrics& m, double rate_per_s, const ServingSlo& slo,
                      std::int64_t max_concurrency = 0);

// The same figures under `engine_bench` in serve's JSON, with `definitions` naming them.
nlohmann::json to_json(const BenchMetrics& m);

}  // namespace twinsim
