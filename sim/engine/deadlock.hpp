#pragma once
// What the engine throws when some tasks can never run: a cycle in the dependency graph,
// or stream program orders that wait on each other (the classic mismatched-send/recv
// deadlock of pipeline schedules).
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/engine/task_graph.hpp"

namespace twinsim::engine {

class DeadlockError : public std::runtime_error {
 public:
  enum class Kind { DependencyCycle, StuckStreams };
  DeadlockError(Kind kind, std::vector<std::string> ops, const std::string& message)
      : std::runtime_error(message), kind_(kind), ops_(std::move(ops)) {}
  Kind kind() const { return kind_; }
  // The ops on the cycle, in wait order: each waits for the next, the last for the first.
  const std::vector<std::string>& ops() const { return ops_; }

 private:
  Kind kind_;
  std::vector<std::string> ops_;
};

// Ops of one dependency cycle (empty if the dependencies form a DAG). The engine checks
// this only when a run gets stuck; call it up front to validate a graph early.
std::vector<TaskId> find_dependency_cycle(const TaskGraph& graph);

// Called by the engine when its queue empties with tasks not run; `finished[t]` says
// whether task t ran. Throws DeadlockError naming a dependency cycle if there is one,
// else each stuck stream head with what it waits on and the cycle of waits.
[[noreturn]] void throw_deadlock(const TaskGraph& graph, std::span<const std::uint8_t> finished);

}  // namespace twinsim::engine
