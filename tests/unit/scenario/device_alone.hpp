#pragma once
// A scenario text priced on the device alone (`stack: none`) unless it names a stack: the tests
// of the engine's mechanisms check the op list's costs, which a scenario without `stack:` would
// price under its workload's default stack (scenario/default_stack.hpp).
#include <string>
#include <vector>

#include "scenario/load.hpp"

namespace twinsim::test {

inline Scenario device_alone(const std::string& text, const std::vector<std::string>& sets = {}) {
  const bool names_stack = text.rfind("stack:", 0) == 0 || text.find("\nstack:") != std::string::npos;
  return load_scenario_text(names_stack ? text : text + "\nstack: none\n", sets);
}

}  // namespace twinsim::test
