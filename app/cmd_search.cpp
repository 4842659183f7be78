// `twinsim search SCENARIO [--gpus N | --gpus-range A:B] [--objective step_time|cost|tokens_per_s]
//  [--top K] [--csv FILE] [--json] [--set K=V]...`: every valid plan of the scenario's
// model, cluster and global batch, ranked (sim/search/plan_search.hpp).
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <tuple>

#include "app/cli_checks.hpp"
#include "app/commands.hpp"
#include "app/mpi_exchange.hpp"
#include "app/same_inputs.hpp"
#include "app/scenario_args.hpp"
#include "exec/runtime/mpi_session.hpp"
#include "io/whole_file.hpp"
#include "sim/search/plan_search.hpp"
#include "sim/search/recompute_budget.hpp"
#include "sim/search/search_json.hpp"
#include "sim/search/search_text.hpp"
#include "sim/search/sharded_search.hpp"

namespace twinsim {

namespace {

struct SearchArgs {
  ScenarioArgs scenario;
  std::int64_t gpus = 0;
  std::string gpus_range;
  std::string objective = "step_time";
  int top = 10;
  std::string csv;
  bool analytic_only = false;
  int max_micro_batch = 16;
  std::int64_t max_plans = 50'000'000;
  bool recompute_mix = false;
  bool offload = false;
  double budget_gib = 0;
};

void parse_range(const SearchArgs& a, const Scenario& s, SearchSpaceOptions& o) {
  if (a.gpus > 0 && !a.gpus_range.empty())
    throw ScenarioError("--gpus-range", a.gpus_range, "cannot be combined with --gpus");
  o.min_gpus = o.max_gpus = a.gpus > 0 ? a.gpus : s.plan.world_size();  // default: the scenario's own GPU count
  if (!a.gpus_range.empty())
    std::tie(o.min_gpus, o.max_gpus) = cli::whole_range("--gpus-range", a.gpus_range, 1, std::int64_t{1} << 24);
}

// No plan at all (not one that does not fit): the GPU count splits neither the model nor
// the global batch, which more GPUs cannot mend.
void refuse_empty_space(const SearchArgs& a, const Scenario& s, const SearchSpaceOptions& space) {
  const bool range = !a.gpus_range.empty();
  throw ScenarioError(range ? "--gpus-range" : "--gpus",
                      range ? a.gpus_range : std::to_string(space.min_gpus),
                      "admits no plan: no tp x pp x cp x dp of " + std::string(range ? "those GPU counts" : "that many GPUs") +
                          " divides the model's heads and layers and training.global_batch=" +
                          std::to_string(s.training->global_batch) + " (try fewer GPUs)");
}

void run_search(const SearchArgs& a, const CLI::App& command) {
  Scenario s = load_from_args(a.scenario);
  if (!s.training) throw ScenarioError("training", "", "search needs a scenario with a training section");
  if (a.recompute_mix) {
    const RecomputeMix r = plan_recompute(s, static_cast<std::int64_t>(a.budget_gib * 1024 * 1024 * 1024));
    if (a.scenario.json) std::cout << to_json(r).dump(2) << "\n";
    else print_mix(std::cout, r);
    return;
  }
  if (!a.csv.empty()) io::check_writable(a.csv);  // before the search, not after
  // the budget each plan must fit instead of the GPU's memory (the fit test reads it there)
  if (a.budget_gib > 0) s.cluster.gpu.memory_bytes = static_cast<std::int64_t>(a.budget_gib * 1024 * 1024 * 1024);
  SearchOptions o;
  if (!parse_objective(a.objective, o.objective))
    throw ScenarioError("--objective", a.objective, "must be step_time, cost or tokens_per_s");
  parse_range(a, s, o.space);
  o.space.max_micro_batch = a.max_micro_batch;
  o.max_plans = a.max_plans;
  o.space.consider_offload = a.offload || s.plan.offload_optimizer;  // a scenario that offloads asks for it
  if (o.space.consider_offload && !s.cluster.host.described())
    throw ScenarioError("--offload", "", "needs the cluster's host side (cluster.host: PCIe and CPU memory)");
  o.top = a.top;
  o.simulate = !a.analytic_only;
  o.progress = [](std::int64_t done, std::int64_t total) {
    std::cerr << "\rsearch: " << done << " / " << total << " plans" << (done == total ? "\n" : "") << std::flush;
  };
  SearchResult r;
  if (launched_by_mpirun()) {  // the pass split over the ranks; rank 0 confirms and prints
    exec::MpiSession mpi;
    MpiExchange exchange;
    check_same_inputs(exchange, command_inputs(command, a.scenario));  // before any work
    std::optional<SearchResult> mine = sharded_search_plans(s, o, exchange);
    if (!mine) return;
    r = std::move(*mine);
  } else {
    r = search_plans(s, o);
  }
  if (r.candidates == 0) refuse_empty_space(a, s, o.space);
  if (!a.csv.empty()) io::write_file_whole(a.csv, [&](std::ostream& out) { write_csv(out, r); });
  if (a.scenario.json) std::cout << to_json(r, o.objective).dump(2) << "\n";
  else print_kept_settings(std::cout, s.plan), print_result(std::cout, r);
}

}  // namespace

void add_search_command(CLI::App& app) {
  auto a = std::make_shared<SearchArgs>();
  CLI::App* cmd = app.add_subcommand("search", "find the best parallel plans for a training scenario");
  add_scenario_args(*cmd, a->scenario);
  cmd->add_option("--gpus", a->gpus, "exactly this many GPUs (default: the scenario's)")
      ->check(cli::whole(1, std::int64_t{1} << 24));
  cmd->add_option("--gpus-range", a->gpus_range, "every GPU count from A to B, e.g. 1:4096");
  cmd->add_option("--objective", a->objective, "step_time | cost (GPU-seconds per step) | tokens_per_s");
  cmd->add_option("--top", a->top, "plans to report (each simulated with the event engine)")
      ->check(cli::whole(1, 10'000));
  cmd->add_option("--csv", a->csv, "write the top plans and the Pareto front as CSV");
  cmd->add_option("--max-micro-batch", a->max_micro_batch, "largest micro-batch tried")->check(cli::whole(1, 64));
  cmd->add_option("--max-plans", a->max_plans,
                  "refuse up front a search space of more plans than this (default 5e7, about 30 s; 0: no limit)")
      ->check(cli::whole(0, std::numeric_limits<std::int64_t>::max()));
  cmd->add_flag("--analytic-only", a->analytic_only, "rank by the closed-form estimate only (no event engine)");
  cmd->add_flag("--offload", a->offload, "also try each plan with ZeRO-Offload (plan.offload_optimizer)");
  auto* mix = cmd->add_flag("--recompute-mix", a->recompute_mix,
                            "instead of searching: the cheapest per-layer recompute mix for the scenario's own plan");
  // the mix keeps the scenario's own plan: the search's options would be ignored
  for (const char* search_only : {"--gpus", "--gpus-range", "--objective", "--top", "--csv", "--max-micro-batch",
                                  "--max-plans", "--analytic-only", "--offload"})
    mix->excludes(cmd->get_option(search_only));
  cmd->add_option("--memory-budget-gib", a->budget_gib, "memory each plan must fit in, or the budget of --recompute-mix (default: the GPU's memory)")
      ->check(cli::number(0, 1e6, true));
  cmd->callback([a, cmd] { run_search(*a, *cmd); });
}

}  // namespace twinsim
