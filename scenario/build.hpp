#pragma once
// Scenarios built in code from typed parts (capacity planning, vTrain's rows): the same
// rules a scenario file meets (the model's cross-field checks, then resolve_and_validate),
// without writing YAML text to parse it back. No YAML here: sim/ builds its scenarios with
// this alone; the catalog and text readers are load.hpp's.
#include "scenario/scenario.hpp"

namespace twinsim {

// Checks `s` as load_scenario_text would and resolves what a file may leave out (the
// cluster's node count when 0, dp, stage layers). Throws ScenarioError.
Scenario validated_scenario(Scenario s);

}  // namespace twinsim
