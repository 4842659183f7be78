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
#include "sim/inference/serve_run.hpp"
#include "io/whole_file.hpp"

namespace twinsim {

namespace {

struct ServeArgs {
  ScenarioArgs scenario;
  ServeRequest request;
  std::string csv;
  double swap_space_gib = 0;
};

void run_serve(const ServeArgs& a) {
  ServeRequest request = a.request;
  request.options.keep_occupancy = !a.csv.empty();  // one sample per pass, only for the CSV
  request.options.swap_space_bytes = a.swap_space_gib * 1024 * 1024 * 1024;
  const Scenario s = load_from_args(a.scenario);
  if (!s.inference) throw ScenarioError("inference", "", "serve needs a scenario with an inference section");
  if (!a.csv.empty()) io::check_writable(a.csv);  // before the simulation, not after
  const ServeRun run = twinsim::run_serve(s, request);
  if (!a.csv.empty()) io::write_file_whole(a.csv, [&](std::ostream& out) { write_occupancy_csv(out, run.result); });
  if (a.scenario.json) std::cout << run.json.dump(2) << "\n";
  else print_serve_run(std::cout, run);
}

}  // namespace

void add_serve_command(CLI::App& app) {
  auto a = std::make_shared<ServeArgs>();
  CLI::App* cmd = app.add_subcommand("serve", "simulate continuous-batching serving of a request stream");
  add_scenario_args(*cmd, a->scenario);
  cmd->add_option("--requests", a->request.requests, "requests to simulate (Poisson arrivals)")
      ->check(cli::whole(1, 10'000'000));
  cmd->add_option("--rate", a->request.rate_per_s, "mean arrivals per second")->check(cli::number(1e-6, 1e9));
  cmd->add_option("--seed", a->request.seed, "seed of the arrival process (same seed, same run)")
      ->check(cli::whole(0, std::numeric_limits<std::int64_t>::max()));
  auto* trace_file = cmd->add_option("--trace-file", a->request.trace_file, "CSV of requests: arrival_s,prompt_len,output_len")
                         ->check(CLI::ExistingFile);
  // a trace gives the arrivals itself: Poisson's settings would be ignored
  for (const char* poisson : {"--requests", "--rate", "--seed"}) trace_file->excludes(cmd->get_option(poisson));
  cmd->add_option("--csv", a->csv, "write KV-cache occupancy over time (one row per pass)");
  cmd->add_option("--max-sequence-steps", a->request.options.max_sequence_steps,
                  "refuse up front requests needing more sequence steps (output tokens + prefill chunks; about 1.5M "
                  "a second) than this (default 2e8; 0: no limit)")
      ->check(cli::whole(0, std::numeric_limits<std::int64_t>::max()));
  cmd->add_option("--block-size", a->request.options.kv.block_tokens, "tokens per KV block (vLLM default 16)")
      ->check(cli::whole(1, 65536));
  cmd->add_option("--gpu-memory-utilization", a->request.options.kv.memory_utilization, "share of HBM the engine uses")
      ->check(cli::number(0.01, 1.0));
  cmd->add_option("--max-num-batched-tokens", a->request.options.kv.max_batched_tokens, "tokens per pass at most")
      ->check(cli::whole(1, std::int64_t{1} << 24));
  cmd->add_option("--max-num-seqs", a->request.options.max_sequences, "sequences per pass at most")
      ->check(cli::whole(1, 1'000'000));
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
  cmd->add_option("--router", a->request.router,
                  "serve all plan.dp replicas behind a router: round_robin | least_loaded (default: one replica, "
                  "the rate its own)");
  cmd->callback([a] { run_serve(*a); });
}

}  // namespace twinsim
