#pragma once
// Cross-section rules: degrees that must divide what they split, a world size that
// must match the cluster, batch arithmetic. Also fills in what the file may leave out
// (plan.dp, cluster.nodes, plan.stage_layers).
#include "scenario/scenario.hpp"

namespace twinsim {

// `plan.dp == 0` and `cluster.nodes == 0` mean "not given". Throws ScenarioError.
void resolve_and_validate(Scenario& s);

}  // namespace twinsim
