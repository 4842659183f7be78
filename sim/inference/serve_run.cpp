#include "sim/inference/serve_run.hpp"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "hardware/prefill_attention.hpp"
#include "models/report_schema.hpp"
#include "scenario/errors.hpp"
#include "sim/inference/bench_requests.hpp"
#include "sim/inference/disaggregated.hpp"
#include "sim/inference/kv_cache.hpp"
#include "sim/inference/requests.hpp"
#include "sim/inference/trtllm_bench_limits.hpp"

namespace twinsim {

namespace {

// --engine-bench: vLLM's figures always (`engine_bench` as before), and the engine's own
// block where it is SGLang's or trtllm-bench's, under its name.
void add_engine_bench(ServeRun& run, const ServeRequest& r, BenchEngine engine, std::int64_t gpus) {
  run.bench = bench_metrics(run.result, r.percentiles, r.slo);
  run.bench_engine = engine;
  nlohmann::json& j = run.json["engine_bench"] = to_json(run.bench);
  j["engine"] = to_string(engine);
  if (engine == BenchEngine::sglang) {
    run.sglang = sglang_bench_metrics(run.result);
    j["sglang"] = to_json(run.sglang);
  } else if (engine == BenchEngine::trtllm) {
    run.trtllm = trtllm_bench_metrics(run.result, gpus);
    j["trtllm"] = to_json(run.trtllm);
  }
}

// The stack's scheduler limits: trtllm-bench's own (StackSpec::serving_bench_limits) or its
// fixed defaults; 0 where it names none.
EngineLimits engine_limits(const Scenario& s) {
  if (s.stack.serving_bench_limits)  // --kv_cache_free_gpu_mem_fraction: the pool's own fraction
    return trtllm_bench_limits(s, s.stack.serving_kv_free_fraction > 0 ? s.stack.serving_kv_free_fraction : 0.9);
  return {s.stack.serving_max_sequences, s.stack.serving_max_batched_tokens};
}

}  // namespace

ServeRun run_serve(const Scenario& s, const ServeRequest& r) {
  if (!s.inference) throw ScenarioError("inference", "", "serve needs a scenario with an inference section");
  ServeOptions options = r.options;
  // the scenario's cached prefix (inference.prefix_tokens) unless --prefix-tokens gives one
  if (options.prefix_tokens == 0) options.prefix_tokens = s.inference->prefix_tokens;
  if (options.prefix_tokens > 0) options.prefix_hit_rate = r.prefix_hit_rate;
  options.prefix_seed = r.seed;
  options.acceptance_seed = r.seed;  // inference.speculative's draws
  // the engine's scheduler defaults (the stack's) unless the flags gave their own
  const EngineLimits limits = engine_limits(s);
  if (!r.max_batched_tokens_given && limits.max_num_tokens > 0) options.kv.max_batched_tokens = limits.max_num_tokens;
  if (!r.max_sequences_given && limits.max_batch_size > 0) options.max_sequences = limits.max_batch_size;
  if (options.cuda_graph_batch_sizes.empty()) options.cuda_graph_batch_sizes = s.stack.serving_cuda_graph_batch_sizes;
  if (!r.block_tokens_given) options.kv.block_tokens = engine_block_tokens(s.stack);
  options.keep_itl = options.keep_itl || r.engine_bench;
  if (!r.router.empty()) {
    if (!parse_router(r.router, options.replicas.router))
      throw ScenarioError("--router", r.router, "must be round_robin or least_loaded");
    options.replicas.replicas = s.plan.dp;
  }
  const std::vector<Request> requests =
      r.trace_file.empty()
          ? bench_requests({r.requests, r.rate_per_s, r.burstiness, s.inference->prompt_len, s.inference->output_len,
                            r.range_ratio, r.seed, r.numpy_tokenizer_vocab, r.server_prompt_len})
          : read_request_trace(r.trace_file);
  ServeRun run;
  const auto& d = s.inference->disaggregation;
  if (d && options.max_concurrency > 0)
    throw ScenarioError("--max-concurrency", std::to_string(options.max_concurrency),
                        "is not modelled for a disaggregated deployment (inference.disaggregation)");
  std::optional<DisaggregatedServing> split;
  if (d) split = simulate_disaggregated(s, requests, options);
  run.result = split ? std::move(split->result) : simulate_serving(s, requests, options);
  run.summary = summarize(run.result);
  run.json = to_json(run.summary, run.result);
  if (!s.stack.serving_prefill_attention.empty()) {  // the stack's prefill kernel, and the one that ran
    const std::string_view ran = prefill_attention_that_runs(s.stack, s.cluster.gpu);
    run.json["prefill_attention"] = {{"chosen", s.stack.serving_prefill_attention},
                                     {"ran", ran.empty() ? std::string("none") : std::string(ran)}};
  }
  if (split) {
    const LatencyStats transfer = latency_stats(split->transfer_s);
    run.json["disaggregation"] = {{"prefill_replicas", d->prefill_replicas},
                                  {"prefill_tp", d->prefill_tp_or(s.plan.tp)},
                                  {"decode_replicas", d->decode_replicas},
                                  {"decode_tp", s.plan.tp},
                                  {"gpus", split->prefill_gpus + split->decode_gpus},
                                  {"kv_transfer_s", {{"mean_s", transfer.mean_s}, {"p99_s", transfer.p99_s}}}};
  } else {
    run.json["replicas"] = {{"count", options.replicas.replicas},
                            {"router", r.router.empty() ? "none" : std::string(to_string(options.replicas.router))}};
  }
  if (r.engine_bench) {
    // the GPUs served on: both pools of a disaggregated run, else every replica simulated
    const std::int64_t gpus =
        split ? split->prefill_gpus + split->decode_gpus : options.replicas.replicas * s.plan.world_size() / s.plan.dp;
    add_engine_bench(run, r, r.bench_engine.value_or(default_bench_engine(s.stack)), gpus);
  }
  run.json[kSchemaVersionKey] = kReportSchemaVersion;
  run.json["arrivals"] = r.trace_file.empty()
                             ? nlohmann::json{{"poisson_rate_per_s", r.rate_per_s}, {"seed", r.seed}}
                             : nlohmann::json{{"trace_file", r.trace_file}};
  if (r.trace_file.empty() && std::isinf(r.rate_per_s))  // JSON has no infinity: all at t = 0
    run.json["arrivals"] = {{"all_at_once", true}, {"seed", r.seed}};
  if (r.trace_file.empty() && r.burstiness != 1) run.json["arrivals"]["burstiness"] = r.burstiness;
  if (r.trace_file.empty() && r.range_ratio > 0) run.json["arrivals"]["range_ratio"] = r.range_ratio;
  if (r.trace_file.empty() && r.numpy_tokenizer_vocab > 0)
    run.json["arrivals"]["numpy_tokenizer_vocab"] = r.numpy_tokenizer_vocab;
  if (r.trace_file.empty() && r.server_prompt_len > 0) run.json["arrivals"]["server_prompt_len"] = r.server_prompt_len;
  if (options.max_concurrency > 0) run.json["arrivals"]["max_concurrency"] = options.max_concurrency;
  return run;
}

namespace {

// inference.batch requests at `rate_per_s` (infinity: all at t = 0) into the whole deployment.
ServeRequest benchmark_request(const Scenario& s, double rate_per_s) {
  if (!s.inference) throw ScenarioError("inference", "", "a benchmark run needs a scenario with an inference section");
  ServeRequest request;
  request.requests = s.inference->batch;
  request.rate_per_s = rate_per_s;
  request.options.keep_occupancy = false;
  request.options.max_sequence_steps = 0;
  // the benchmark feeds the whole deployment: plan.dp replicas (attention DP) take turns
  if (s.plan.dp > 1) request.router = "round_robin";
  return request;
}

}  // namespace

ServeRun run_offline_benchmark(const Scenario& s) {
  return run_serve(s, benchmark_request(s, std::numeric_limits<double>::infinity()));
}

ServeRun run_online_benchmark(const Scenario& s, double rate_per_s, std::int64_t max_concurrency,
                              std::int64_t numpy_tokenizer_vocab, std::int64_t server_prompt_len) {
  ServeRequest request = benchmark_request(s, rate_per_s);
  request.options.max_concurrency = max_concurrency;
  request.numpy_tokenizer_vocab = numpy_tokenizer_vocab;
  request.server_prompt_len = server_prompt_len;
  request.engine_bench = true;
  return run_serve(s, request);
}

void print_serve_run(std::ostream& out, const ServeRun& run) {
  print_serving(out, run.summary, run.result);
  if (run.json.contains("prefill_attention")) {  // none ran: the GPU has no causal curve of the preset's kernel
    const nlohmann::json& p = run.json["prefill_attention"];
    out << "prefill attention " << p["chosen"].get<std::string>() << " chosen, " << p["ran"].get<std::string>()
        << " ran\n";
  }
  if (!run.json.contains("disaggregation")) return;
  const nlohmann::json& d = run.json["disaggregation"];
  out << "disaggregated    " << d["prefill_replicas"].get<int>() << " prefill replica(s) of TP " << d["prefill_tp"].get<int>()
      << ", " << d["decode_replicas"].get<int>() << " decode replica(s) of TP " << d["decode_tp"].get<int>() << " ("
      << d["gpus"].get<std::int64_t>() << " GPUs); K,V transfer " << 1e3 * d["kv_transfer_s"]["mean_s"].get<double>()
      << " ms a request (mean); KV occupancy above: the first decode replica's\n";
}

void print_engine_bench(std::ostream& out, const ServeRun& run, const ServeRequest& request) {
  const std::int64_t cap = request.options.max_concurrency;
  if (run.bench_engine == BenchEngine::sglang) print_sglang_bench(out, run.sglang, request.rate_per_s, cap);
  else if (run.bench_engine == BenchEngine::trtllm) print_trtllm_bench(out, run.trtllm);
  else print_vllm_bench(out, run.bench, request.rate_per_s, request.slo, cap);
}

}  // namespace twinsim
