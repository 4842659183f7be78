// `twinsim serve SCENARIO --requests N --rate R [--seed S] [--trace-file requests.csv]
//  [--csv occupancy.csv] [--json] [--set K=V]...`: continuous-batching serving of one
// model replica (sim/inference/serving.hpp). Poisson arrivals use the scenario's
// inference.prompt_len and output_len; a trace file gives each request its own.
#include <limits>
#include <fstream>
#include <iostream>
#include <stdexcept>

#include "app/commands.hpp"
#include "app/cli_checks.hpp"
#include "app/scenario_args.hpp"
#include "sim/inference/serving_report.hpp"
#include "io/whole_file.hpp"

namespace twinsim {

namespace {

struct ServeArgs {
  ScenarioArgs scenario;
  std::int64_t requests = 1000;
  double rate = 1.0;
  std::uint64_t seed = 0;
  std::string trace_file;
  std::string csv;
  ServeOptions options;
  double prefix_hit_rate = 1.0;  // with --prefix-tokens: every request hits unless told otherwise
};

void run_serve(const ServeArgs& a) {
  ServeOptions options = a.options;
  if (options.prefix_tokens > 0) options.prefix_hit_rate = a.prefix_hit_rate;
  options.prefix_seed = a.seed;
  options.acceptance_seed = a.seed;  // inference.speculative's draws
  options.keep_occupancy = !a.csv.empty();  // one sample per pass, only for the CSV
  const Scenario s = load_from_args(a.scenario);
  if (!s.inference) throw ScenarioError("inference", "", "serve needs a scenario with an inference section");
  if (!a.csv.empty()) io::check_writable(a.csv);  // before the simulation, not after
  const std::vector<Request> requests =
      a.trace_file.empty()
          ? poisson_requests(a.requests, a.rate, a.seed, s.inference->prompt_len, s.inference->output_len)
          : read_request_trace(a.trace_file);
  const ServingResult result = simulate_serving(s, requests, options);
  const ServingSummary summary = summarize(result);
  if (!a.csv.empty()) {
    io::write_file_whole(a.csv, [&](std::ostream& out) { write_occupancy_csv(out, result); });
  }
  if (a.scenario.json) {
    nlohmann::json j = to_json(summary, result);
    j["arrivals"] = a.trace_file.empty() ? nlohmann::json{{"poisson_rate_per_s", a.rate}, {"seed", a.seed}}
                                         : nlohmann::json{{"trace_file", a.trace_file}};
    std::cout << j.dump(2) << "\n";
  } else {
    print_serving(std::cout, summary, result);
  }
}

}  // namespace

void add_serve_command(CLI::App& app) {
  auto a = std::make_shared<ServeArgs>();
  CLI::App* cmd = app.add_subcommand("serve", "simulate continuous-batching serving of a request stream");
  add_scenario_args(*cmd, a->scenario);
  cmd->add_option("--requests", a->requests, "requests to simulate (Poisson arrivals)")
      ->check(cli::whole(1, 10'000'000));
  cmd->add_option("--rate", a->rate, "mean arrivals per second")->check(cli::number(1e-6, 1e9));
  cmd->add_option("--seed", a->seed, "seed of the arrival process (same seed, same run)")
      ->check(cli::whole(0, std::numeric_limits<std::int64_t>::max()));
  auto* trace_file = cmd->add_option("--trace-file", a->trace_file, "CSV of requests: arrival_s,prompt_len,output_len")
                         ->check(CLI::ExistingFile);
  // a trace gives the arrivals itself: Poisson's settings would be ignored
  for (const char* poisson : {"--requests", "--rate", "--seed"}) trace_file->excludes(cmd->get_option(poisson));
  cmd->add_option("--csv", a->csv, "write KV-cache occupancy over time (one row per pass)");
  cmd->add_option("--max-sequence-steps", a->options.max_sequence_steps,
                  "refuse up front requests needing more sequence steps (output tokens + prefill chunks; about 1.5M "
                  "a second) than this (default 2e8; 0: no limit)")
      ->check(cli::whole(0, std::numeric_limits<std::int64_t>::max()));
  cmd->add_option("--block-size", a->options.kv.block_tokens, "tokens per KV block (vLLM default 16)")
      ->check(cli::whole(1, 65536));
  cmd->add_option("--gpu-memory-utilization", a->options.kv.memory_utilization, "share of HBM the engine uses")
      ->check(cli::number(0.01, 1.0));
  cmd->add_option("--max-num-batched-tokens", a->options.kv.max_batched_tokens, "tokens per pass at most")
      ->check(cli::whole(1, std::int64_t{1} << 24));
  cmd->add_option("--max-num-seqs", a->options.max_sequences, "sequences per pass at most")
      ->check(cli::whole(1, 1'000'000));
  auto* prefix = cmd->add_option("--prefix-tokens", a->options.prefix_tokens,
                                 "prefix caching: the shared prompt prefix (e.g. a system prompt), tokens")
                     ->check(cli::whole(1, std::int64_t{1} << 30));
  cmd->add_option("--prefix-hit-rate", a->prefix_hit_rate,
                  "share of requests that find the prefix cached (default 1 with --prefix-tokens)")
      ->check(cli::number(0, 1))
      ->needs(prefix);
  cmd->callback([a] { run_serve(*a); });
}

}  // namespace twinsim
