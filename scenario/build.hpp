#pragma once
// Scenarios built in code from typed parts (capacity planning, vTrain's rows): the same
// rules a scenario file meets (the model's cross-field checks, then resolve_and_validate),
// without writing YAML text to parse it back.
#include <string>

#include "scenario/scenario.hpp"

namespace twinsim {

// Checks `s` as load_scenario_text would and resolves what a file may leave out (the
// cluster's node count when 0, dp, stage layers). Throws ScenarioError.
Scenario validated_scenario(Scenario s);

// A catalog node type with as many nodes as the plan needs (`cluster: NAME`).
ClusterSpec catalog_cluster(const std::string& name);
// A catalog software stack (`stack: NAME`).
StackSpec catalog_stack(const std::string& name);

// A cluster or stack a user wrote on a command line: a catalog name or a YAML flow mapping
// (`{preset: dgx-a100-80gb, intra_node: {bandwidth_GBps: 150}}`), read as that section of
// a scenario file; `origin` names it in messages (e.g. "--cluster").
ClusterSpec cluster_from_text(const std::string& text, const std::string& origin);
StackSpec stack_from_text(const std::string& text, const std::string& origin);

}  // namespace twinsim
