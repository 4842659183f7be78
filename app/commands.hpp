#pragma once
// Each subcommand lives in app/cmd_<name>.cpp and registers itself on the CLI here.
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace twinsim {

// Options every scenario-driven command shares: the file and `--set` overrides.
struct ScenarioArgs {
  std::string path;  // empty: the built-in default scenario
  std::vector<std::string> overrides;
  bool json = false;
};
void add_scenario_args(CLI::App& cmd, ScenarioArgs& args);

void add_memory_command(CLI::App& app);
void add_describe_model_command(CLI::App& app);
void add_checkpoint_command(CLI::App& app);
void add_simulate_command(CLI::App& app);
void add_collective_command(CLI::App& app);
void add_calibrate_command(CLI::App& app);
void add_compare_command(CLI::App& app);
void add_validate_command(CLI::App& app);
void add_search_command(CLI::App& app);
void add_capacity_command(CLI::App& app);
void add_run_command(CLI::App& app);
void add_serve_command(CLI::App& app);
void add_validate_csv_command(CLI::App& app);
void add_fit_gemm_command(CLI::App& app);
void add_fit_network_command(CLI::App& app);
void add_trust_table_command(CLI::App& app);

}  // namespace twinsim
