#pragma once
// The discrete-event engine: runs a TaskGraph and returns its Timeline.
//
// A task starts at the first instant at which
//   - all its dependencies have finished,
//   - it is at the head of the program order of every stream it occupies, and
//   - every link it occupies is free (links serve ready tasks first come, first served),
// and it holds all its resources until it ends, `duration` seconds later.
// Throws DeadlockError if some tasks can never start.
#include "sim/engine/task_graph.hpp"
#include "sim/engine/timeline.hpp"

namespace twinsim::engine {

Timeline simulate(const TaskGraph& graph);

}  // namespace twinsim::engine
