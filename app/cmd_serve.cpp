// `twinsim serve SCENARIO --requests N --rate R [--seed S] [--trace-file requests.csv]
//  [--csv occupancy.csv] [--requests-csv requests.csv] [--json] [--set K=V]...`:
// continuous-batching serving of one model replica (sim/inference/serving.hpp). Poisson
// arrivals use the scenario's inference.prompt_len and output_len; a trace file gives each
// request its own.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "app/commands.hpp"
#include "app/cli_checks.hpp"
#include "app/scenario_args.hpp"
#include "scenario/errors.hpp"
#include "sim/inference/serve_run.hpp"
#include "io/whole_file.hpp"

namespace twinsim {

namespace {

struct ServeArgs {
  ScenarioArgs scenario;
  ServeRequest request;
  std::string csv;
  std::string requests_csv;
  double swap_space_gib = 0;
  std::vector<double> percentiles;
  std::vector<std::string> goodput;
  std::string engine;  // --engine-bench's NAME, when given one
  CLI::Option* engine_bench = nullptr;
  CLI::Option* batched_tokens = nullptr;
  CLI::Option* sequences = nullptr;
  CLI::Option* block_size = nullptr;
};

// vLLM's --goodput KEY:MS pairs (ttft, tpot, e2el)
ServingSlo parse_goodput(const std::vector<std::string>& pairs) {
  ServingSlo slo;
  for (const std::string& pair : pairs) {
    const auto colon = pair.find(':');
    const std::string key = pair.substr(0, colon);
    double ms = 0;
    try {
      ms = colon == std::string::npos ? -1 : std::stod(pair.substr(colon + 1));
    } catch (const std::exception&) {
      ms = -1;
    }
    double* target = key == "ttft" ? &slo.ttft_s : key == "tpot" ? &slo.tpot_s : key == "e2el" ? &slo.e2el_s : nullptr;
    if (target == nullptr || !(ms > 0))
      throw ScenarioError("--goodput", pair, "must be ttft:MS, tpot:MS or e2el:MS with MS > 0 (vLLM's --goodput)");
    *target = ms * 1e-3;
  }
  return slo;
}

// --engine-bench [vllm|sglang|trtllm]: the engine named, else the stack's (run_serve); --goodput
// and --metric-percentiles are vLLM's flags, so they pick vLLM's block, and no other.
void choose_bench_engine(ServeArgs& a, ServeRequest& request) {
  request.engine_bench = a.engine_bench->count() > 0;
  const bool vllm_flags = request.slo.any() || !a.percentiles.empty();
  if (vllm_flags && !request.engine_bench)
    throw ScenarioError("--engine-bench", "", "is needed by --goodput and --metric-percentiles");
  // `serve --engine-bench SCENARIO`, from when the flag took no name: the scenario it was
  if (!a.engine.empty() && !find_bench_engine(a.engine) && a.scenario.path.empty() &&
      std::filesystem::is_regular_file(a.engine))
    a.scenario.path = std::exchange(a.engine, "");
  if (!a.engine.empty()) request.bench_engine = parse_bench_engine(a.engine, "--engine-bench");
  if (vllm_flags && request.bench_engine && *request.bench_engine != BenchEngine::vllm)
    throw ScenarioError(request.slo.any() ? "--goodput" : "--metric-percentiles", "",
                        "is vLLM's flag: --engine-bench " + a.engine + " prints " + a.engine +
                            "'s own fixed columns (drop it, or ask for --engine-bench vllm)");
  if (vllm_flags) request.bench_engine = BenchEngine::vllm;
}

void run_serve(ServeArgs& a) {
  ServeRequest request = a.request;
  request.options.keep_occupancy = !a.csv.empty();  // one sample per pass, only for the CSV
  request.options.swap_space_bytes = a.swap_space_gib * 1024 * 1024 * 1024;
  request.max_batched_tokens_given = a.batched_tokens->count() > 0;
  request.max_sequences_given = a.sequences->count() > 0;
  request.block_tokens_given = a.block_size->count() > 0;
  if (!a.percentiles.empty()) request.percentiles = a.percentiles;
  request.slo = parse_goodput(a.goodput);
  choose_bench_engine(a, request);
  const Scenario s = load_from_args(a.scenario);
  if (!s.inference) throw ScenarioError("inference", "", "serve needs a scenario with an inference section");
  if (!a.csv.empty()) io::check_writable(a.csv);  // before the simulation, not after
  if (!a.requests_csv.empty()) io::check_writable(a.requests_csv);
  const ServeRun run = twinsim::run_serve(s, request);
  if (!a.csv.empty()) io::write_file_whole(a.csv, [&](std::ostream& out) { write_occupancy_csv(out, run.result); });
  if (!a.requests_csv.empty())
    io::write_file_whole(a.requests_csv, [&](std::ostream& out) { write_requests_csv(out, run.result); });
  if (a.scenario.json) std::cout << run.json.dump(2) << "\n";
  else if (request.engine_bench) print_engine_bench(std::cout, run, request);
  else print_serve_run(std::cout, run);
}

}  // namespace

void add_serve_command(CLI::App& app) {
  auto a = std::make_shared<ServeArgs>();
  CLI::App* cmd = app.add_subcommand("serve", "simulate continuous-batching serving of a request stream");
  add_scenario_args(*cmd, a->scenario);
  cmd->add_option("--requests", a->request.requests, "requests to simulate (Poisson arrivals)")
      ->check(cli::whole(1, 10'000'000));
  cmd->add_option("--rate", a->request.rate_per_s, "mean arrivals per second; inf: all at once (an offline benchmark)")
      ->check(CLI::Validator([](std::string& text) { return text == "inf" ? std::string() : cli::number(1e-6, 1e9)(text); },
                             "NUMBER|inf"));
  cmd->add_option("--burstiness", a->request.burstiness,
                  "gamma-distributed gaps of this shape at the same mean rate (vLLM --burstiness; 1: Poisson)")
      ->check(cli::number(1e-3, 1e3));
  cmd->add_option("--random-range-ratio", a->request.range_ratio,
                  "each request's lengths uniform in [len (1 - r), len (1 + r)] (vLLM's random dataset; default 0)")
      ->check(cli::number(0, 0.999));
  cmd->add_option("--numpy-tokenizer-vocab", a->request.numpy_tokenizer_vocab,
                  "draw the request set as vLLM's 2025 benchmark_serving.py does (numpy, --dataset-name random) for a "
                  "tokenizer of this vocab_size (Llama 3: 128000; Qwen 2.5: 151643)")
      ->check(cli::whole(1, 0xFFFFFFFFLL));
  cmd->add_option("--server-prompt-len", a->request.server_prompt_len,
                  "with --numpy-tokenizer-vocab: each prompt's length as the server re-tokenizes the decoded ids "
                  "(scripts/random_prompt_server_tokens.py; default: the scenario's prompt_len)")
      ->needs(cmd->get_option("--numpy-tokenizer-vocab"))
      ->check(cli::whole(1, 10'000'000));
  cmd->add_option("--seed", a->request.seed, "seed of the arrival process (same seed, same run)")
      ->check(cli::whole(0, std::numeric_limits<std::int64_t>::max()));
  auto* trace_file = cmd->add_option("--trace-file", a->request.trace_file, "CSV of requests: arrival_s,prompt_len,output_len")
                         ->check(CLI::ExistingFile);
  // a trace gives the arrivals itself: Poisson's settings would be ignored
  for (const char* poisson : {"--requests", "--rate", "--seed", "--numpy-tokenizer-vocab", "--server-prompt-len"})
    trace_file->excludes(cmd->get_option(poisson));
  cmd->add_option("--max-concurrency", a->request.options.max_concurrency,
                  "requests in flight at most: each waits for its arrival and a free slot (vLLM's and SGLang's "
                  "--max-concurrency; default: no cap)")
      ->check(cli::whole(1, 10'000'000));
  cmd->add_option("--csv", a->csv, "write KV-cache occupancy over time (one row per pass)");
  cmd->add_option("--requests-csv", a->requests_csv,
                  "write each request's arrival, first token, finish and TTFT (one row per request)");
  cmd->add_option("--max-sequence-steps", a->request.options.max_sequence_steps,
                  "refuse up front requests needing more sequence steps (output tokens + prefill chunks; about 1.5M "
                  "a second) than this (default 2e8; 0: no limit)")
      ->check(cli::whole(0, std::numeric_limits<std::int64_t>::max()));
  a->block_size = cmd->add_option("--block-size", a->request.options.kv.block_tokens,
                                  "tokens per KV block (default: the stack's, else vLLM's 16)")
                      ->check(cli::whole(1, 65536));
  cmd->add_option("--gpu-memory-utilization", a->request.options.kv.memory_utilization, "share of HBM the engine uses")
      ->check(cli::number(0.01, 1.0));
  a->batched_tokens = cmd->add_option("--max-num-batched-tokens", a->request.options.kv.max_batched_tokens,
                                      "tokens per pass at most (default: the stack's, else 2048)")
                          ->check(cli::whole(1, std::int64_t{1} << 24));
  a->sequences = cmd->add_option("--max-num-seqs", a->request.options.max_sequences,
                                 "sequences per pass at most (default: the stack's, else 256)")
                     ->check(cli::whole(1, 1'000'000));
  a->engine_bench = cmd->add_option("--engine-bench", a->engine,
                                    "print the result block of an engine's benchmark script: vllm (`vllm bench "
                                    "serve`), sglang (`python -m sglang.bench_serving`) or trtllm (`trtllm-bench "
                                    "throughput --streaming`); no name: the stack's engine (vLLM's with --goodput or "
                                    "--metric-percentiles); adds `engine_bench` to the JSON")
                        ->expected(0, 1);
  cmd->add_option("--metric-percentiles", a->percentiles, "percentiles --engine-bench prints (default 99; vLLM's flag)")
      ->delimiter(',')
      ->check(cli::number(0, 100));
  cmd->add_option("--goodput", a->goodput,
                  "SLOs for --engine-bench's goodput, vLLM's syntax: ttft:MS tpot:MS e2el:MS");
  auto* prefix = cmd->add_option("--prefix-tokens", a->request.options.prefix_tokens,
                                 "prefix caching: the shared prompt prefix (e.g. a system prompt), tokens")
                     ->check(cli::whole(1, std::int64_t{1} << 30));
  cmd->add_option("--prefix-hit-rate", a->request.prefix_hit_rate,
                  "share of requests that find the prefix cached (default 1 with --prefix-tokens)")
      ->check(cli::number(0, 1))
      ->needs(prefix);
  cmd->add_option("--swap-space", a->swap_space_gib,
                  "GiB of host memory per GPU for preempted sequences' K,V, copied over PCIe instead of recomputed "
                  "(vLLM v0 --swap-space with --preemption-mode swap; default 0: recompute)")
      ->check(cli::number(0, 1e6));
  cmd->add_option("--cuda-graph-batch-sizes", a->request.options.cuda_graph_batch_sizes,
                  "CUDA-graph batch sizes with padding (TensorRT-LLM's cuda_graph_config batch_sizes, "
                  "enable_padding): a generation-only pass is priced padded to the next captured size, under "
                  "attention DP the largest rank's (default: none)")
      ->delimiter(',')
      ->check(cli::whole(1, 1'000'000));
  cmd->add_option("--router", a->request.router,
                  "serve all plan.dp replicas behind a router: round_robin | least_loaded (default: one replica, "
                  "the rate its own)");
  cmd->callback([a] { run_serve(*a); });
}

}  // namespace twinsim
