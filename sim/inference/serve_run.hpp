#pragma once
// One `twinsim serve` run as a library call (the command and the Python module's
// twinsim.serve both make it): the arrivals (seeded Poisson, or a trace file), the
// prefix cache's and speculative decoding's seeds, the simulation, its summary and the
// JSON the command prints.
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "scenario/scenario.hpp"
#include "sim/inference/bench_engine.hpp"
#include "sim/inference/bench_report.hpp"
#include "sim/inference/bench_sglang.hpp"
#include "sim/inference/bench_trtllm.hpp"
#include "sim/inference/serving.hpp"
#include "sim/inference/serving_report.hpp"

namespace twinsim {

struct ServeRequest {
  std::int64_t requests = 1000;  // Poisson arrivals of the scenario's prompt and output lengths
  double rate_per_s = 1.0;       // infinity: all at t = 0 (an offline benchmark)
  // vLLM's --burstiness (gamma gaps; 1: Poisson) and --random-range-ratio (lengths uniform in
  // [len (1 - r), len (1 + r)]): sim/inference/bench_requests.hpp
  double burstiness = 1.0;
  double range_ratio = 0;
  // --numpy-tokenizer-vocab V: the request set vLLM's 2025 benchmark_serving.py draws with numpy
  // over a tokenizer of V tokens (BenchRequestSpec::numpy_tokenizer_vocab); 0: this project's draws
  std::int64_t numpy_tokenizer_vocab = 0;
  // --server-prompt-len N: with those draws, each prompt's length as the server tokenizes it
  // (BenchRequestSpec::server_prompt_len); 0: the scenario's prompt_len
  std::int64_t server_prompt_len = 0;
  // --max-num-batched-tokens / --max-num-seqs given: they win over the stack's scheduler
  // defaults (StackSpec::serving_max_batched_tokens, serving_max_sequences)
  bool max_batched_tokens_given = false;
  bool max_sequences_given = false;
  // --block-size given: it wins over the stack's block size (StackSpec::serving_kv_block_tokens)
  bool block_tokens_given = false;
  // --engine-bench: also the engines' benchmark figures (bench_report.hpp), with ITL kept
  bool engine_bench = false;
  // --engine-bench NAME: whose block (bench_engine.hpp); unset: the stack's engine
  std::optional<BenchEngine> bench_engine;
  std::vector<double> percentiles = {99};  // vLLM's --metric-percentiles default
  ServingSlo slo;                          // vLLM's --goodput
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
  BenchMetrics bench;   // with ServeRequest::engine_bench (vLLM's figures, whatever the engine)
  BenchEngine bench_engine = BenchEngine::vllm;  // the engine whose block is printed
  SglangBenchMetrics sglang;                     // with bench_engine sglang
  TrtllmBenchMetrics trtllm;                     // with bench_engine trtllm
};

// Throws ScenarioError for a scenario without an inference section, and what
// simulate_serving and read_request_trace throw.
ServeRun run_serve(const Scenario& s, const ServeRequest& request);

// An offline benchmark as the engines run theirs (trtllm-bench throughput, `vllm bench
// throughput`, bench_serving at --request-rate inf): inference.batch requests of the scenario's
// lengths, all at t = 0, under the stack's scheduler defaults; with plan.dp > 1 all the replicas
// behind a round-robin router (the figures the whole deployment's). The validation cases' metric
// offline_output_tokens_per_s is its summary's output_tokens_per_s.
ServeRun run_offline_benchmark(const Scenario& s);

// An online benchmark as `vllm bench serve` and SGLang's bench_serving run theirs at
// --request-rate R: inference.batch requests of the scenario's lengths, Poisson arrivals at
// `rate_per_s` (seed 0), under the stack's scheduler defaults, the engine-bench figures kept
// (ServeRun::bench); with plan.dp > 1 all the replicas behind a round-robin router.
// `rate_per_s` may be infinite (all sent at once); `max_concurrency` > 0: the client's cap on
// requests in flight (--max-concurrency).
// `numpy_tokenizer_vocab` > 0: the arrivals benchmark_serving.py drew, `server_prompt_len` > 0 their
// prompts as the server tokenizes them (ServeRequest's fields).
ServeRun run_online_benchmark(const Scenario& s, double rate_per_s, std::int64_t max_concurrency = 0,
                              std::int64_t numpy_tokenizer_vocab = 0, std::int64_t server_prompt_len = 0);

// The command's table (print_serving), and the pools of a disaggregated run.
void print_serve_run(std::ostream& out, const ServeRun& run);

// `serve --engine-bench`: the run's engine's benchmark block (run.bench_engine's).
void print_engine_bench(std::ostream& out, const ServeRun& run, const ServeRequest& request);

}  // namespace twinsim
