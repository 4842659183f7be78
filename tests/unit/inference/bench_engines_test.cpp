// `serve --engine-bench sglang|trtllm`: SGLang's bench_serving block (sim/inference/
// bench_sglang.hpp) and trtllm-bench's report (bench_trtllm.hpp) on a hand-made run, each
// expected line written out as the engine's script formats the hand-derived value, and the
// engine chosen by name or by the scenario's stack (bench_engine.hpp).
#include <gtest/gtest.h>

#include <limits>
#include <sstream>

#include "scenario/errors.hpp"
#include "scenario/load.hpp"
#include "serving_scenarios.hpp"
#include "sim/inference/bench_engine.hpp"
#include "sim/inference/bench_sglang.hpp"
#include "sim/inference/bench_trtllm.hpp"
#include "sim/inference/serve_run.hpp"

namespace twinsim {
namespace {

// Three requests (arrival, first token, finish; prompt, output tokens):
//   A  0.0  0.1  0.5;  10, 5: tokens at 0.1, 0.15, 0.25, 0.3, 0.5: gaps 0.05, 0.1, 0.05, 0.2
//   B  0.2  0.5  0.6;  30, 2: gap 0.1
//   C  0.4  1.0  1.0;  20, 1: its one token ends it, no gap
// TTFT {0.1, 0.3, 0.6}, E2E {0.5, 0.4, 0.6}; the duration 0 to 1.0 s; 60 tokens in, 8 out.
ServingResult three_requests() {
  ServingResult r;
  r.requests = {{0.0, 10, 5}, {0.2, 30, 2}, {0.4, 20, 1}};
  r.times.resize(3);
  r.times[0].first_token_s = 0.1, r.times[0].finish_s = 0.5;
  r.times[1].first_token_s = 0.5, r.times[1].finish_s = 0.6;
  r.times[2].first_token_s = 1.0, r.times[2].finish_s = 1.0;
  r.itl_s = {0.05, 0.1, 0.05, 0.2, 0.1};
  return r;
}

TEST(SglangBench, MetricsAsItsCalculateMetrics) {
  const SglangBenchMetrics m = sglang_bench_metrics(three_requests());
  EXPECT_EQ(m.completed, 3);
  EXPECT_DOUBLE_EQ(m.duration_s, 1.0);
  EXPECT_NEAR(m.input_throughput, 60.0, 1e-9);
  EXPECT_NEAR(m.total_throughput, 68.0, 1e-9);
  EXPECT_NEAR(m.concurrency, (0.5 + 0.4 + 0.6) / 1.0, 1e-12);  // sum of E2E latencies / duration
  EXPECT_NEAR(m.e2el.median_s, 0.5, 1e-12);
  EXPECT_NEAR(m.ttft.mean_s, 1.0 / 3, 1e-12);
  EXPECT_NEAR(m.ttft.percentile_s[0], 0.3 + 0.98 * 0.3, 1e-12);  // P99: rank 0.99 x 2 = 1.98 between 0.3, 0.6
  // ITL sorted {0.05, 0.05, 0.1, 0.1, 0.2}: P95 at rank 3.8, P99 at 3.96, between 0.1 and 0.2
  EXPECT_NEAR(m.itl.mean_s, 0.1, 1e-12);
  EXPECT_NEAR(m.itl.percentile_s[0], 0.18, 1e-12);
  EXPECT_NEAR(m.itl.percentile_s[1], 0.196, 1e-12);
  EXPECT_DOUBLE_EQ(m.itl_max_s, 0.2);
  EXPECT_EQ(m.accept_length, 0);  // no speculative decoding
}

TEST(SglangBench, PrintsItsBlockLineForLine) {
  std::ostringstream out;
  print_sglang_bench(out, sglang_bench_metrics(three_requests()), 4.0, 0);
  // bench_serving.py's "{:<40} {:<10}" / "{:<40} {:<10.2f}" lines, a blank line before the title
  EXPECT_EQ(out.str(),
            "\n"
            "============ Serving Benchmark Result ============\n"
            "Backend:                                 sglang    \n"
            "Traffic request rate:                    4.0       \n"
            "Max request concurrency:                 not set   \n"
            "Successful requests:                     3         \n"
            "Benchmark duration (s):                  1.00      \n"
            "Total input tokens:                      60        \n"
            "Total generated tokens:                  8         \n"
            "Total generated tokens (retokenized):    8         \n"
            "Request throughput (req/s):              3.00      \n"
            "Input token throughput (tok/s):          60.00     \n"
            "Output token throughput (tok/s):         8.00      \n"
            "Total token throughput (tok/s):          68.00     \n"
            "Concurrency:                             1.50      \n"
            "----------------End-to-End Latency----------------\n"
            "Mean E2E Latency (ms):                   500.00    \n"
            "Median E2E Latency (ms):                 500.00    \n"
            "---------------Time to First Token----------------\n"
            "Mean TTFT (ms):                          333.33    \n"
            "Median TTFT (ms):                        300.00    \n"
            "P99 TTFT (ms):                           594.00    \n"
            "---------------Inter-Token Latency----------------\n"
            "Mean ITL (ms):                           100.00    \n"
            "Median ITL (ms):                         100.00    \n"
            "P95 ITL (ms):                            180.00    \n"
            "P99 ITL (ms):                            196.00    \n"
            "Max ITL (ms):                            200.00    \n"
            "==================================================\n");
}

TEST(SglangBench, CapAllAtOnceAndAcceptLength) {
  ServingResult r = three_requests();
  r.verify_steps = 4, r.verified_tokens = 10;  // 10 tokens from 4 verify steps: 2.5 a step
  std::ostringstream out;
  print_sglang_bench(out, sglang_bench_metrics(r), std::numeric_limits<double>::infinity(), 16);
  const std::string text = out.str();
  EXPECT_NE(text.find("Traffic request rate:                    inf       \n"), std::string::npos) << text;
  EXPECT_NE(text.find("Max request concurrency:                 16        \n"), std::string::npos) << text;
  // printed right after Concurrency, as the script prints the server's avg_spec_accept_length
  EXPECT_NE(text.find("Concurrency:                             1.50      \n"
                      "Accept length:                           2.50      \n"),
            std::string::npos)
      << text;
}

// Python's str() of a float (the rate line): what python3 prints for each.
TEST(SglangBench, RateAsPythonWritesAFloat) {
  EXPECT_EQ(python_float_str(4.0), "4.0");
  EXPECT_EQ(python_float_str(10), "10.0");
  EXPECT_EQ(python_float_str(0.5), "0.5");
  EXPECT_EQ(python_float_str(0.1), "0.1");
  EXPECT_EQ(python_float_str(1.0 / 3), "0.3333333333333333");
  EXPECT_EQ(python_float_str(12345.678), "12345.678");
  EXPECT_EQ(python_float_str(0.0001), "0.0001");
  EXPECT_EQ(python_float_str(1e-5), "1e-05");
  EXPECT_EQ(python_float_str(2.5e-7), "2.5e-07");
  EXPECT_EQ(python_float_str(1e15), "1000000000000000.0");
  EXPECT_EQ(python_float_str(1e16), "1e+16");
  EXPECT_EQ(python_float_str(std::numeric_limits<double>::infinity()), "inf");
}

// PercentileStats.from_iterable takes sorted[int(n q)], no interpolation: of 1..10, P50 is
// the 6th value (numpy's median would be 5.5) and P90-P99 the largest. A published run of 16
// requests shows the same: its P95 and P99 equal its maximum (index 15).
TEST(TrtllmBench, PercentilesIndexTheSortedValues) {
  const TrtllmPercentiles p = trtllm_percentiles({10, 9, 8, 7, 6, 5, 4, 3, 2, 1});
  EXPECT_EQ(p.p50, 6);
  EXPECT_EQ(p.p90, 10);
  EXPECT_EQ(p.p95, 10);
  EXPECT_EQ(p.p99, 10);
  EXPECT_EQ(p.minimum, 1);
  EXPECT_EQ(p.average, 5.5);
  std::vector<double> sixteen;
  for (int i = 1; i <= 16; ++i) sixteen.push_back(i);
  const TrtllmPercentiles q = trtllm_percentiles(sixteen);
  EXPECT_EQ(q.p90, 15);  // int(16 x 0.9) = 14: the 15th value
  EXPECT_EQ(q.p95, q.maximum);
  EXPECT_EQ(trtllm_percentiles({}).p99, 0);
}

// Per request of three_requests (N output tokens):
//   TPOT (finish - first) / (N - 1): A 0.4 / 4 = 0.1, B 0.1 / 1 = 0.1, C 0 (N = 1): mean 0.0667
//   (vLLM leaves C out: 0.1); output per user N / E2E: 10, 5, 1.667: mean 5.5556;
//   GTPS (N - 1) / (E2E - TTFT): 10, 10, 0: mean 6.6667; 2 GPUs: 8 tokens/s / 2 = 4 a GPU.
TEST(TrtllmBench, MetricsAsItsStatistics) {
  const TrtllmBenchMetrics m = trtllm_bench_metrics(three_requests(), 2);
  EXPECT_EQ(m.requests, 3);
  EXPECT_DOUBLE_EQ(m.total_latency_s, 1.0);
  EXPECT_NEAR(m.concurrent_requests, 1.5, 1e-12);
  EXPECT_NEAR(m.tpot_s.average, 0.2 / 3, 1e-12);
  EXPECT_EQ(m.tpot_s.minimum, 0);
  EXPECT_NEAR(m.output_per_user.average, (10 + 5 + 1 / 0.6) / 3, 1e-9);
  EXPECT_NEAR(m.gen_tps.average, 20.0 / 3, 1e-9);
  EXPECT_NEAR(m.ttft_s.p50, 0.3, 1e-12);  // sorted {0.1, 0.3, 0.6}[int(1.5)]
  EXPECT_NEAR(m.ttft_s.p99, 0.6, 1e-12);  // [int(2.97)]; numpy's P99 would be 0.594
  EXPECT_NEAR(m.latency_s.p50, 0.5, 1e-12);
}

TEST(TrtllmBench, PrintsItsReportLineForLine) {
  std::ostringstream out;
  print_trtllm_bench(out, trtllm_bench_metrics(three_requests(), 2));
  // reporting.py's f-strings ({:.4f}, labels padded to column 32 and 50, "{key.upper():<7}")
  EXPECT_EQ(out.str(),
            "===========================================================\n"
            "= REQUEST DETAILS \n"
            "===========================================================\n"
            "Number of requests:             3\n"
            "Number of concurrent requests:  1.5000\n"
            "Average Input Length (tokens):  20.0000\n"
            "Average Output Length (tokens): 2.6667\n"
            "===========================================================\n"
            "= PERFORMANCE OVERVIEW \n"
            "===========================================================\n"
            "Request Throughput (req/sec):                     3.0000\n"
            "Total Output Throughput (tokens/sec):             8.0000\n"
            "Total Token Throughput (tokens/sec):              68.0000\n"
            "Total Latency (ms):                               1000.0000\n"
            "Average request latency (ms):                     500.0000\n"
            "Per User Output Throughput [w/ ctx] (tps/user):   5.5556\n"
            "Per GPU Output Throughput (tps/gpu):              4.0000\n"
            "Average time-to-first-token [TTFT] (ms):          333.3333\n"
            "Average time-per-output-token [TPOT] (ms):        66.6667\n"
            "Per User Output Speed (tps/user):                 6.6667\n"
            "\n"
            "-- Per-Request Time-per-Output-Token [TPOT] Breakdown (ms)\n"
            "\n"
            "[TPOT] MINIMUM: 0.0000\n"
            "[TPOT] MAXIMUM: 100.0000\n"
            "[TPOT] AVERAGE: 66.6667\n"
            "[TPOT] P50    : 100.0000\n"
            "[TPOT] P90    : 100.0000\n"
            "[TPOT] P95    : 100.0000\n"
            "[TPOT] P99    : 100.0000\n"
            "\n"
            "-- Per-Request Time-to-First-Token [TTFT] Breakdown (ms) \n"
            "\n"
            "[TTFT] MINIMUM: 100.0000\n"
            "[TTFT] MAXIMUM: 600.0000\n"
            "[TTFT] AVERAGE: 333.3333\n"
            "[TTFT] P50    : 300.0000\n"
            "[TTFT] P90    : 600.0000\n"
            "[TTFT] P95    : 600.0000\n"
            "[TTFT] P99    : 600.0000\n"
            "\n"
            "-- Per-Request Generation Throughput [GTPS] Breakdown (tps/user)\n"
            "\n"
            "[GTPS] MINIMUM: 0.0000\n"
            "[GTPS] MAXIMUM: 10.0000\n"
            "[GTPS] AVERAGE: 6.6667\n"
            "[GTPS] P50    : 10.0000\n"
            "[GTPS] P90    : 10.0000\n"
            "[GTPS] P95    : 10.0000\n"
            "[GTPS] P99    : 10.0000\n"
            "\n"
            "-- Request Latency Breakdown (ms) -----------------------\n"
            "\n"
            "[Latency] P50    : 500.0000\n"
            "[Latency] P90    : 600.0000\n"
            "[Latency] P95    : 600.0000\n"
            "[Latency] P99    : 600.0000\n"
            "[Latency] MINIMUM: 400.0000\n"
            "[Latency] MAXIMUM: 600.0000\n"
            "[Latency] AVERAGE: 500.0000\n");
}

TEST(BenchEngine, NamedOrTheStacksEngine) {
  EXPECT_EQ(parse_bench_engine("sglang"), BenchEngine::sglang);
  EXPECT_EQ(parse_bench_engine("trtllm"), BenchEngine::trtllm);
  EXPECT_EQ(parse_bench_engine("vllm"), BenchEngine::vllm);
  try {
    parse_bench_engine("tgi");
    ADD_FAILURE() << "an unknown engine was taken";
  } catch (const ScenarioError& e) {
    EXPECT_EQ(e.key, "--engine-bench");
    EXPECT_EQ(e.value, "tgi");
  }
  EXPECT_EQ(default_bench_engine(catalog_stack("sglang")), BenchEngine::sglang);
  EXPECT_EQ(default_bench_engine(catalog_stack("trtllm")), BenchEngine::trtllm);
  EXPECT_EQ(default_bench_engine(catalog_stack("trtllm-v1")), BenchEngine::trtllm);
  EXPECT_EQ(default_bench_engine(catalog_stack("vllm-v1")), BenchEngine::vllm);
  EXPECT_EQ(default_bench_engine(catalog_stack("vllm-v0")), BenchEngine::vllm);
  EXPECT_EQ(default_bench_engine(catalog_stack("none")), BenchEngine::vllm);
}

// Through serve: the stack picks the block unless one is named; vLLM's figures stay in the
// JSON as before, the engine's own beside them; trtllm-bench's per-GPU figure over TP 2.
TEST(BenchEngine, ServeAddsTheEnginesBlockToTheJson) {
  Scenario s = test::serving_scenario("llama3-8b", "dgx-h100", 2, 2, 1, 1, 256, 32);
  s.stack = catalog_stack("sglang");
  ServeRequest request;
  request.requests = 20;
  request.rate_per_s = 5;
  request.engine_bench = true;
  const ServeRun sglang = run_serve(s, request);
  EXPECT_EQ(sglang.bench_engine, BenchEngine::sglang);
  const nlohmann::json& j = sglang.json["engine_bench"];
  EXPECT_EQ(j["engine"], "sglang");
  EXPECT_TRUE(j.contains("ttft") && j.contains("tpot")) << "vLLM's figures are kept";
  EXPECT_EQ(j["sglang"]["completed"], 20);
  EXPECT_DOUBLE_EQ(j["sglang"]["mean_ttft_ms"].get<double>(), j["ttft"]["mean_ms"].get<double>());  // one TTFT
  request.bench_engine = BenchEngine::trtllm;
  const ServeRun trtllm = run_serve(s, request);
  const nlohmann::json& perf = trtllm.json["engine_bench"]["trtllm"]["performance"];
  EXPECT_EQ(trtllm.json["engine_bench"]["engine"], "trtllm");
  EXPECT_FALSE(trtllm.json["engine_bench"].contains("sglang"));
  EXPECT_NEAR(perf["output_throughput_per_gpu_tok_s"].get<double>(),
              perf["system_output_throughput_tok_s"].get<double>() / 2, 1e-9);
}

}  // namespace
}  // namespace twinsim
