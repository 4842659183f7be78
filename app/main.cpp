// twinsim: predict what a parallel plan for LLM training or serving costs on a GPU
// cluster (simulate, memory, collective), and run it for real to check (run, compare).
#include <iostream>
#include <nlohmann/json.hpp>

#include "app/commands.hpp"
#include "app/hand_over.hpp"
#include "app/host_calibration.hpp"
#include "models/checked_math.hpp"
#include "scenario/errors.hpp"

namespace twinsim {

void add_scenario_args(CLI::App& cmd, ScenarioArgs& args) {
  cmd.add_option("scenario", args.path, "scenario file (YAML or JSON); default: the built-in GPT-3 175B on DGX A100")
      ->check([](const std::string& path) {  // "" would silently mean the default
        return path.empty() ? std::string("an empty path names no file (leave it out for the built-in default)")
                            : std::string();
      });
  cmd.add_option("--set", args.overrides, "override a key, e.g. --set plan.tp=4 (repeatable)");
  cmd.add_flag("--json", args.json, "print the JSON report of SCENARIO.md instead of a table");
}

}  // namespace twinsim

namespace twinsim {
namespace {

// Walks the leading words of argv down the command tree ("checkpoint merge"): a word that
// names no command where one is expected gives the message, else "".
std::string unknown_command(CLI::App& app, int argc, char** argv) {
  CLI::App* at = &app;
  std::string path = "twinsim";
  for (int i = 1; i < argc && argv[i][0] != '-'; ++i) {
    const std::vector<CLI::App*> subs = at->get_subcommands({});
    if (subs.empty()) return "";
    CLI::App* next = nullptr;
    std::string names;
    for (CLI::App* sub : subs) {
      if (sub->get_name() == argv[i]) next = sub;
      names += (names.empty() ? "" : ", ") + sub->get_name();
    }
    if (!next) return "'" + std::string(argv[i]) + "' is not a command of " + path + "; commands: " + names;
    at = next;
    path += " " + next->get_name();
  }
  return "";
}

}  // namespace
}  // namespace twinsim

int main(int argc, char** argv) {
  twinsim::remember_command_line(argc, argv);
  CLI::App app{"twinsim: simulate LLM training and serving plans on GPU clusters"};
  app.require_subcommand(1);
  // a flag takes no value: `--json=3` is refused, not read as true (inherited by every command)
  app.option_defaults()->disable_flag_override();
  app.set_version_flag("--version", twinsim::version_line(), "print the version and git revision, then exit");
  twinsim::add_simulate_command(app);
  twinsim::add_memory_command(app);
  twinsim::add_collective_command(app);
  twinsim::add_calibrate_command(app);
  twinsim::add_compare_command(app);
  twinsim::add_validate_command(app);
  twinsim::add_search_command(app);
  twinsim::add_capacity_command(app);
  twinsim::add_run_command(app);
  twinsim::add_serve_command(app);
  twinsim::add_validate_csv_command(app);
  twinsim::add_fit_gemm_command(app);
  twinsim::add_fit_network_command(app);
  twinsim::add_trust_table_command(app);
  twinsim::add_describe_model_command(app);
  twinsim::add_checkpoint_command(app);
  // CLI11 answers an unknown command with "A subcommand is required": name it instead
  if (const std::string unknown = twinsim::unknown_command(app, argc, argv); !unknown.empty()) {
    std::cerr << "twinsim: error: " << unknown << "\n";
    return 2;
  }
  try {
    twinsim::use_host_calibration();  // `cluster: host` is the calibrated host file when there is one
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const twinsim::ScenarioError& e) {
    std::cerr << "twinsim: error: " << e.what() << "\n";
    return 2;
  } catch (const twinsim::OverflowError& e) {
    std::cerr << "twinsim: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "twinsim: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
