// `twinsim simulate SCENARIO [--json] [--trace FILE] [--set K=V]...`
#include <cstdio>
#include <iostream>

#include <unistd.h>
#include <nlohmann/json.hpp>

#include "app/cli_checks.hpp"
#include "app/commands.hpp"
#include "app/mpi_exchange.hpp"
#include "app/same_inputs.hpp"
#include "app/scenario_args.hpp"
#include "exec/runtime/mpi_session.hpp"
#include "io/whole_file.hpp"
#include "scenario/errors.hpp"
#include "sim/report/report.hpp"
#include "sim/training/step_size.hpp"

namespace twinsim {

namespace {

// Half the machine's physical memory: a step graph past that would crowd out everything else.
double default_memory_budget_gib() {
  const double bytes = static_cast<double>(::sysconf(_SC_PHYS_PAGES)) * static_cast<double>(::sysconf(_SC_PAGE_SIZE));
  return bytes > 0 ? 0.5 * bytes / (1024.0 * 1024.0 * 1024.0) : 8.0;
}

void check_step_size(const Scenario& s, Fidelity fidelity, double budget_gib) {
  const StepSize size = estimate_step_size(s, fidelity);
  const double gib = size.bytes / (1024.0 * 1024.0 * 1024.0);
  if (gib <= budget_gib) return;
  char line[320];
  std::snprintf(line, sizeof line,
                "the step graph would hold about %.3g tasks (%.1f GiB), more than the budget: simulate fewer "
                "micro-batches (training.global_batch) or layers, use --fidelity fast, or raise --max-memory-gib",
                size.tasks, gib);
  throw ScenarioError("--max-memory-gib", cli::shown(budget_gib), line);
}

}  // namespace

void add_simulate_command(CLI::App& app) {
  auto args = std::make_shared<ScenarioArgs>();
  auto trace = std::make_shared<std::string>();
  auto fidelity = std::make_shared<std::string>("fast");
  CLI::App* cmd = app.add_subcommand("simulate", "predict one training step or one inference batch");
  add_scenario_args(*cmd, *args);
  cmd->add_option("--trace", *trace, "write a Chrome trace (Perfetto) of the simulated step");
  cmd->add_option("--fidelity", *fidelity,
                  "fast: one GPU per pipeline stage; full: every GPU, collectives and shared NICs (alike "
                  "data-parallel replicas simulated once); full-per-rank: full, each GPU simulated on its own")
      ->check([](const std::string& name) {
        return fidelity_from_string(name) ? std::string() : "must be fast, full or full-per-rank";
      });
  auto budget_gib = std::make_shared<double>(default_memory_budget_gib());
  cmd->add_option("--max-memory-gib", *budget_gib,
                  "refuse a training step whose task graph would take more memory (default: half the machine's)")
      ->check(cli::number(0, 1e6, true));
  auto* fidelity_option = cmd->get_option("--fidelity");
  cmd->callback([cmd, args, trace, fidelity, fidelity_option, budget_gib] {
    const Scenario s = load_from_args(*args);
    const Fidelity mode = *fidelity_from_string(*fidelity);
    if (s.training) check_step_size(s, mode, *budget_gib);
    // an inference batch is priced in closed form: no step graph to trace or to run per GPU
    if (s.inference && !trace->empty())
      throw ScenarioError("--trace", *trace, "traces a training step; this scenario is an inference batch");
    if (s.inference && fidelity_option->count() > 0)
      throw ScenarioError("--fidelity", *fidelity, "applies to a training step; this scenario is an inference batch");
    if (!trace->empty()) io::check_writable(*trace);  // before the work, not after
    // under mpirun the step's simulation is split over the processes; process 0 prints
    if (launched_by_mpirun()) {
      exec::MpiSession mpi;
      MpiExchange exchange;
      check_same_inputs(exchange, command_inputs(*cmd, *args));  // before any work
      const nlohmann::json report = simulate_report(s, *trace, mode, &exchange);
      if (exchange.process() != 0) return;
      if (args->json) std::cout << report.dump(2) << "\n";
      else print_report(std::cout, s, report);
      return;
    }
    const nlohmann::json report = simulate_report(s, *trace, mode);
    if (args->json) std::cout << report.dump(2) << "\n";
    else print_report(std::cout, s, report);
  });
}

}  // namespace twinsim
