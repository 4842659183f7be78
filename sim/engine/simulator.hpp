#pragma once
// The discrete-event engine: runs a TaskGraph and returns its Timeline.
//
// A task starts at the first instant at which
//   - all its dependencies have finished,
//   - it is at the head of the program order of every stream it occupies, and
//   - every link it occupies is free (links serve ready tasks first come, first served),
// and it holds all its resources until it ends, `duration` seconds later.
// Throws DeadlockError if some tasks can never start.
#include <functional>

#include "sim/engine/exchange.hpp"
#include "sim/engine/task_graph.hpp"
#include "sim/engine/timeline.hpp"

namespace twinsim::engine {

Timeline simulate(const TaskGraph& graph);

// The same run split over processes: every process holds the whole graph and simulates the
// tasks on the streams of its ranks (`process_of_rank`; a task on links only goes with its
// first predecessor). At every instant they share the tasks that finished, until none has
// anything left at it, then grant links together: each gathers its waiters and all apply
// the same first-come-first-served order to the same replicated link state. A conservative
// protocol (no process runs ahead of the globally next instant), with the sequential
// engine's result, bit for bit, on every process.
Timeline simulate(const TaskGraph& graph, Exchange& exchange, const std::function<int(int rank)>& process_of_rank);

}  // namespace twinsim::engine
