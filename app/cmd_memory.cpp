// `twinsim memory SCENARIO [--json] [--set K=V]...`: the memory prediction alone.
#include <iostream>
#include <nlohmann/json.hpp>

#include "app/commands.hpp"
#include "app/scenario_args.hpp"
#include "sim/report/report.hpp"

namespace twinsim {

void add_memory_command(CLI::App& app) {
  auto args = std::make_shared<ScenarioArgs>();
  CLI::App* cmd = app.add_subcommand("memory", "predict memory per GPU for a scenario");
  add_scenario_args(*cmd, *args);
  cmd->callback([args] {
    const Scenario s = load_from_args(*args);
    const nlohmann::json report = memory_report(s);
    if (args->json) std::cout << report.dump(2) << "\n";
    else print_report(std::cout, s, report);
  });
}

}  // namespace twinsim
