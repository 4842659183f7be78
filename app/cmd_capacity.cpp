// `twinsim capacity --model M --tokens T --days D --gpu G [--price-per-gpu-hour P]
//  [--failures NAME|none] [--storage-GBps B] [--restart-minutes R] [--sync-checkpoint]`:
// GPUs needed to train M on T tokens within D days, failures included, the plan, time and
// cost (sim/search/capacity.hpp, sim/goodput). `--serve --rate R --ttft-p99 S`: the smallest serving
// deployment (TP x replicas) whose simulated p99 time to first token meets S at R
// requests per second (sim/inference/serving.hpp).
#include <iostream>
#include <nlohmann/json.hpp>

#include "app/cli_checks.hpp"
#include "app/commands.hpp"
#include "scenario/errors.hpp"
#include "scenario/load.hpp"
#include "sim/search/capacity.hpp"
#include "sim/search/search_json.hpp"
#include "sim/search/search_text.hpp"
#include "sim/search/serving_capacity.hpp"

namespace twinsim {

namespace {

struct CapacityArgs {
  CapacityRequest request;
  bool serve = false;
  double rate = 0;
  double ttft_p99 = 0;
  double tpot_p99 = 0;
  bool disaggregate = false;
  std::int64_t prefix_tokens = 0;
  double prefix_hit_rate = 1.0;
  std::string speculative;
  std::int64_t prompt_len = 1024, output_len = 256;
  bool json = false;
  CapacityFailures failures;  // training: a published rate set or "none", and the checkpointing they meet
};

void run_capacity(const CapacityArgs& a) {
  if (a.serve) {
    ServingCapacityRequest r;
    r.model = a.request.model, r.gpu = a.request.gpu, r.rate_per_s = a.rate, r.ttft_p99_s = a.ttft_p99;
    r.prompt_len = a.prompt_len, r.output_len = a.output_len;
    r.tpot_p99_s = a.tpot_p99;
    r.model_spec = catalog_model(r.model), r.node = catalog_cluster_for_gpu(r.gpu);
    r.disaggregate = a.disaggregate;
    r.prefix_tokens = a.prefix_tokens, r.prefix_hit_rate = a.prefix_hit_rate;
    if (!a.speculative.empty()) r.speculative = speculative_from_text(a.speculative, "--speculative");
    const ServingCapacityPlan p = plan_serving_capacity(r);
    if (a.json) std::cout << to_json(r, p).dump(2) << "\n";
    else print_serving_capacity(std::cout, r, p);
    return;
  }
  CapacityRequest r = a.request;
  r.goodput = capacity_goodput(a.failures, "--failures");
  r.model_spec = catalog_model(r.model), r.node = catalog_cluster_for_gpu(r.gpu);
  const CapacityPlan p = plan_capacity(r);
  if (a.json) std::cout << to_json(r, p).dump(2) << "\n";
  else print_capacity(std::cout, r, p);
}

}  // namespace

void add_capacity_command(CLI::App& app) {
  auto a = std::make_shared<CapacityArgs>();
  CapacityRequest& r = a->request;
  CLI::App* cmd = app.add_subcommand("capacity", "GPUs, plan, time and cost to train (or serve) a model");
  cmd->add_option("--model", r.model, "catalog model, e.g. llama3-70b")->required();
  cmd->add_option("--gpu", r.gpu, "catalog GPU, e.g. h100-sxm")->required();
  cmd->add_option("--tokens", r.tokens, "training tokens, e.g. 2e12")->check(cli::number(0, 1e18, true));
  cmd->add_option("--days", r.days, "wall-clock days to train in")->check(cli::number(0, 36500, true));
  cmd->add_option("--price-per-gpu-hour", r.price_per_gpu_hour, "price of one GPU-hour (any currency)")
      ->check(cli::number(0, 1e9));
  cmd->add_option("--seq-len", r.seq_len, "training sequence length")->check(cli::whole(1, std::int64_t{1} << 24));
  cmd->add_option("--global-batch", r.global_batch, "sequences per step")->check(cli::whole(1, std::int64_t{1} << 30));
  cmd->add_option("--max-gpus", r.max_gpus, "largest GPU count considered")->check(cli::whole(1, std::int64_t{1} << 24));
  cmd->add_option("--failures", a->failures.rates,
                  "training: failure rates included in the time (a published set: llama3-h100 (default), rsc1-a100), or none");
  cmd->add_option("--storage-GBps", a->failures.storage_GBps,
                  "training: checkpoint storage bandwidth, all writers together (default: Llama 3's 2 TB/s per 16,384 GPUs)")
      ->check(cli::number(1e-3, 1e9));
  cmd->add_option("--restart-minutes", a->failures.restart_minutes, "training: minutes a restart takes after a failure (default 10)")
      ->check(cli::number(0, 1e6));
  cmd->add_option("--checkpoint-interval-minutes", a->failures.interval_minutes,
                  "training: minutes between checkpoints (default: Young/Daly's optimum)")
      ->check(cli::number(1e-3, 1e7));
  cmd->add_flag("--sync-checkpoint", a->failures.sync_checkpoint, "training: checkpoints stall the step for the whole write");
  auto* serve = cmd->add_flag("--serve", a->serve, "size a serving deployment instead");
  // training's sizing options mean nothing to a serving deployment
  for (const char* training_only : {"--tokens", "--days", "--seq-len", "--global-batch", "--failures", "--storage-GBps",
                                    "--restart-minutes", "--checkpoint-interval-minutes", "--sync-checkpoint"})
    serve->excludes(cmd->get_option(training_only));
  cmd->add_option("--rate", a->rate, "serving: requests per second")->check(cli::number(1e-6, 1e9));
  cmd->add_option("--ttft-p99", a->ttft_p99, "serving: p99 time-to-first-token target, seconds")
      ->check(cli::number(0, 1e6, true));
  cmd->add_option("--tpot-p99", a->tpot_p99, "serving: p99 time-per-output-token target, seconds (default: none)")
      ->check(cli::number(0, 1e6, true));
  cmd->add_flag("--disaggregate", a->disaggregate, "serving: also try prefill/decode disaggregated deployments");
  auto* prefix = cmd->add_option("--prefix-tokens", a->prefix_tokens,
                                 "serving: prompts share this prefix, prefix-cached (serve --prefix-tokens)")
                     ->check(cli::whole(1, std::int64_t{1} << 30));
  cmd->add_option("--prefix-hit-rate", a->prefix_hit_rate, "serving: share of requests finding the prefix cached")
      ->check(cli::number(0, 1))
      ->needs(prefix);
  cmd->add_option("--speculative", a->speculative,
                  "serving: every candidate with speculative decoding, inference.speculative as a YAML mapping");
  cmd->add_option("--prompt-len", a->prompt_len, "serving: prompt tokens per request")
      ->check(cli::whole(1, std::int64_t{1} << 24));
  cmd->add_option("--output-len", a->output_len, "serving: output tokens per request")
      ->check(cli::whole(1, std::int64_t{1} << 24));
  // and serving's only with --serve
  for (const char* serving_only : {"--rate", "--ttft-p99", "--tpot-p99", "--disaggregate", "--prefix-tokens", "--speculative", "--prompt-len", "--output-len"})
    cmd->get_option(serving_only)->needs(serve);
  cmd->add_flag("--json", a->json, "print JSON");
  cmd->callback([a] {
    if (!a->serve && (a->request.tokens <= 0 || a->request.days <= 0))
      throw ScenarioError("--tokens/--days", "", "are required for training capacity (or give --serve)");
    run_capacity(*a);
  });
}

}  // namespace twinsim
