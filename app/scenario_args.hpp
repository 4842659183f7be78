#pragma once
#include "app/commands.hpp"
#include "app/host_calibration.hpp"
#include "scenario/load.hpp"

namespace twinsim {

// The scenario a command was given, or the built-in default; a warning when its `cluster:
// host` was calibrated on another CPU.
inline Scenario load_from_args(const ScenarioArgs& args) {
  Scenario s = args.path.empty() ? load_scenario_text(default_scenario_text(), args.overrides, "<default scenario>")
                                 : load_scenario_file(args.path, args.overrides);
  warn_if_host_calibrated_elsewhere(s.cluster.name);
  return s;
}

}  // namespace twinsim
