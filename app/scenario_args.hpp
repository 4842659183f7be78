#pragma once
#include "app/commands.hpp"
#include "scenario/load.hpp"

namespace twinsim {

// The scenario a command was given, or the built-in default.
inline Scenario load_from_args(const ScenarioArgs& args) {
  if (args.path.empty()) return load_scenario_text(default_scenario_text(), args.overrides, "<default scenario>");
  return load_scenario_file(args.path, args.overrides);
}

}  // namespace twinsim
