// `twinsim simulate SCENARIO [--json] [--trace FILE] [--set K=V]...`
#include <iostream>

#include "app/commands.hpp"
#include "app/scenario_args.hpp"
#include "scenario/errors.hpp"
#include "sim/report/report.hpp"

namespace twinsim {

void add_simulate_command(CLI::App& app) {
  auto args = std::make_shared<ScenarioArgs>();
  auto trace = std::make_shared<std::string>();
  auto fidelity = std::make_shared<std::string>("fast");
  CLI::App* cmd = app.add_subcommand("simulate", "predict one training step or one inference batch");
  add_scenario_args(*cmd, *args);
  cmd->add_option("--trace", *trace, "write a Chrome trace (Perfetto) of the simulated step");
  cmd->add_option("--fidelity", *fidelity,
                  "fast: one GPU per pipeline stage; full: every GPU, collectives and shared NICs")
      ->check(CLI::IsMember({"fast", "full"}));
  auto* fidelity_option = cmd->get_option("--fidelity");
  cmd->callback([args, trace, fidelity, fidelity_option] {
    const Scenario s = load_from_args(*args);
    // an inference batch is priced in closed form: no step graph to trace or to run per GPU
    if (s.inference && !trace->empty())
      throw ScenarioError("--trace", *trace, "traces a training step; this scenario is an inference batch");
    if (s.inference && fidelity_option->count() > 0)
      throw ScenarioError("--fidelity", *fidelity, "applies to a training step; this scenario is an inference batch");
    const nlohmann::json report = simulate_report(s, *trace, *fidelity == "full" ? Fidelity::full : Fidelity::fast);
    if (args->json) std::cout << report.dump(2) << "\n";
    else print_report(std::cout, s, report);
  });
}

}  // namespace twinsim
