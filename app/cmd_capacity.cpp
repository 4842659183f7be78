// `twinsim capacity --model M --tokens T --days D --gpu G [--price-per-gpu-hour P]`:
// GPUs needed to train M on T tokens within D days, the plan, time and cost
// (sim/search/capacity.hpp). `--serve --rate R --ttft-p99 S`: the smallest serving
// deployment (TP x replicas) whose simulated p99 time to first token meets S at R
// requests per second (sim/inference/serving.hpp).
#include <cmath>
#include <iomanip>
#include <iostream>

#include "app/commands.hpp"
#include "app/cli_checks.hpp"
#include "scenario/build.hpp"
#include "scenario/load.hpp"
#include "sim/inference/serving_report.hpp"
#include "sim/search/capacity.hpp"
#include "sim/search/search_json.hpp"

namespace twinsim {

namespace {

struct CapacityArgs {
  CapacityRequest request;
  bool serve = false;
  double rate = 0;
  double ttft_p99 = 0;
  std::int64_t prompt_len = 1024, output_len = 256, requests = 300;
  int max_replicas = 64;
  bool json = false;
};

void print_training(const CapacityRequest& r, const CapacityPlan& p) {
  std::cout << std::setprecision(4) << r.model << ": " << static_cast<double>(p.params) / 1e9 << "B parameters, "
            << r.tokens / 1e12 << "T tokens -> 6NT = " << p.flops_6nt << " FLOPs (Kaplan et al. 2020)\n"
            << p.steps << " steps of " << r.global_batch << " x " << r.seq_len << " tokens\n";
  if (!p.feasible) {
    std::cout << "no plan on up to " << r.max_gpus << " " << r.gpu << " GPUs trains it in " << r.days
              << " days (raise --max-gpus or --days)\n";
    return;
  }
  std::cout << "GPUs needed: " << p.gpus << " x " << r.gpu << " (" << p.node_type << " nodes)\n"
            << "plan: " << describe(p.plan) << "\n"
            << "step: " << p.step_s << " s simulated (" << p.analytic_step_s << " s estimated), MFU "
            << std::setprecision(3) << p.mfu << ", peak " << static_cast<double>(p.peak_bytes) / (1 << 30)
            << " GiB per GPU\n"
            << std::setprecision(4) << "time to train: " << p.days << " days (6NT at the simulated rate: "
            << p.days_6nt << " days)\n"
            << "GPU-hours: " << p.gpu_hours;
  if (r.price_per_gpu_hour > 0) std::cout << ", cost: " << std::fixed << std::setprecision(0) << p.cost;
  std::cout << "\n";
}

// Serving: one replica per TP group, replicas share the stream evenly (plan.dp replicas
// serve independent streams, sim/inference/serving.hpp); the smallest tp x replicas wins.
void run_serve_capacity(const CapacityArgs& a) {
  const CapacityRequest& r = a.request;
  if (a.rate <= 0) throw ScenarioError("--rate", std::to_string(a.rate), "must be positive with --serve");
  if (a.ttft_p99 <= 0) throw ScenarioError("--ttft-p99", std::to_string(a.ttft_p99), "must be positive with --serve");
  const std::string node = node_type_for_gpu(r.gpu);
  const ClusterSpec cluster = catalog_node(node);
  nlohmann::json tried = nlohmann::json::array();
  std::int64_t best_gpus = 0;
  nlohmann::json best;
  for (int tp = 1; tp <= cluster.gpus_per_node; tp *= 2) {
    Scenario s;
    s.model = catalog_model(r.model);
    s.cluster = catalog_cluster(node);
    s.plan.tp = tp;
    InferenceWorkload w;
    w.prompt_len = a.prompt_len;
    w.output_len = a.output_len;
    w.batch = 1;
    s.inference = w;
    try {
      s = validated_scenario(s);
    } catch (const ScenarioError&) {
      continue;  // tp does not split this model
    }
    for (int replicas = 1; replicas <= a.max_replicas; ++replicas) {
      if (best_gpus > 0 && static_cast<std::int64_t>(tp) * replicas >= best_gpus) break;
      const auto requests = poisson_requests(a.requests, a.rate / replicas, 1, a.prompt_len, a.output_len);
      double p99 = 0;
      try {
        p99 = summarize(simulate_serving(s, requests)).ttft.p99_s;
      } catch (const std::invalid_argument&) {
        break;  // weights leave no room for the KV cache at this tp
      }
      tried.push_back({{"tp", tp}, {"replicas", replicas}, {"ttft_p99_s", p99}});
      if (p99 <= a.ttft_p99) {
        best_gpus = static_cast<std::int64_t>(tp) * replicas;
        best = {{"tp", tp}, {"replicas", replicas}, {"gpus", best_gpus}, {"ttft_p99_s", p99}};
        break;
      }
    }
  }
  nlohmann::json j = {{"model", r.model}, {"gpu", r.gpu}, {"node_type", node}, {"rate_per_s", a.rate},
                      {"ttft_p99_target_s", a.ttft_p99}, {"feasible", best_gpus > 0}, {"tried", tried}};
  if (best_gpus > 0) j["deployment"] = best;
  if (a.json) {
    std::cout << j.dump(2) << "\n";
    return;
  }
  if (best_gpus == 0) {
    std::cout << "no deployment of up to " << a.max_replicas << " replicas meets p99 TTFT " << a.ttft_p99 << " s\n";
    return;
  }
  std::cout << "smallest deployment: " << best_gpus << " x " << r.gpu << " = " << best["replicas"]
            << " replica(s) of tp=" << best["tp"] << ", p99 TTFT " << best["ttft_p99_s"] << " s at " << a.rate
            << " requests/s (" << a.prompt_len << " prompt + " << a.output_len << " output tokens)\n";
}

void run_capacity(const CapacityArgs& a) {
  if (a.serve) return run_serve_capacity(a);
  const CapacityPlan p = plan_capacity(a.request);
  if (a.json) std::cout << to_json(a.request, p).dump(2) << "\n";
  else print_training(a.request, p);
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
  auto* serve = cmd->add_flag("--serve", a->serve, "size a serving deployment instead");
  // training's sizing options mean nothing to a serving deployment
  for (const char* training_only : {"--tokens", "--days", "--seq-len", "--global-batch"})
    serve->excludes(cmd->get_option(training_only));
  cmd->add_option("--rate", a->rate, "serving: requests per second")->check(cli::number(1e-6, 1e9));
  cmd->add_option("--ttft-p99", a->ttft_p99, "serving: p99 time-to-first-token target, seconds")
      ->check(cli::number(0, 1e6, true));
  cmd->add_option("--prompt-len", a->prompt_len, "serving: prompt tokens per request")
      ->check(cli::whole(1, std::int64_t{1} << 24));
  cmd->add_option("--output-len", a->output_len, "serving: output tokens per request")
      ->check(cli::whole(1, std::int64_t{1} << 24));
  // and serving's only with --serve
  for (const char* serving_only : {"--rate", "--ttft-p99", "--prompt-len", "--output-len"})
    cmd->get_option(serving_only)->needs(serve);
  cmd->add_flag("--json", a->json, "print JSON");
  cmd->callback([a] {
    if (!a->serve && (a->request.tokens <= 0 || a->request.days <= 0))
      throw ScenarioError("--tokens/--days", "", "are required for training capacity (or give --serve)");
    run_capacity(*a);
  });
}

}  // namespace twinsim
