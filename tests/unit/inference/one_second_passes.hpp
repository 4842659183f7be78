#pragma once
// A pass cost for the serving loop that is easy to follow by hand: every pass takes one
// second on one stage, and the passes it priced are logged when asked.
#include <vector>

#include "sim/inference/iteration_cost.hpp"
#include "sim/inference/scheduler.hpp"

namespace twinsim::test {

struct OneSecondPasses {
  std::vector<PassShape>* log = nullptr;
  IterationCost operator()(const PassShape& pass) const {
    if (log) log->push_back(pass);
    IterationCost c;
    c.stage_s.assign(1, 1.0);
    return c;
  }
};

}  // namespace twinsim::test
