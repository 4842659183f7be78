#pragma once
// The output of the engine: when each task ran, and the sums a report needs.
#include <cstdint>
#include <span>
#include <vector>

#include "sim/engine/task_graph.hpp"

namespace twinsim::engine {

struct Timeline {
  std::vector<double> start_s;           // per task
  std::vector<double> end_s;             // per task
  std::vector<double> resource_busy_s;   // per resource: sum of durations of its tasks
  std::vector<double> category_total_s;  // per category: sum of task durations (task-seconds,
                                         // a collective on 8 streams counts once)
  std::vector<double> slowed_s;          // per task: time added by interference
                                         // (TaskGraph::add_interference; empty without)
  double makespan_s = 0.0;               // last end time (the clock starts at 0)
  std::uint64_t events = 0;              // events popped from the queue (one per task)
};

// Time during which `category` is exposed on one rank, i.e. the measure of the instants t
// at which all three hold:
//   1. a task of `category` runs on some resource in `watched` (e.g. the rank's comm
//      streams and links),
//   2. no task of another category runs on a resource in `watched`,
//   3. no task at all runs on a resource in `covering` (e.g. the rank's compute stream).
// For dp_comm_exposed_s: watched = the rank's comm streams, covering = its compute stream.
// Instants where two comm categories overlap with compute idle count for neither; they
// are reported by `exposed_time` of no single category (see README.md).
double exposed_time(const TaskGraph& graph, const Timeline& timeline, CategoryId category,
                    std::span<const ResourceId> watched, std::span<const ResourceId> covering);

// exposed_time for every category at once, in one sweep (index = CategoryId).
std::vector<double> exposed_times(const TaskGraph& graph, const Timeline& timeline,
                                  std::span<const ResourceId> watched, std::span<const ResourceId> covering);

// Measure of the union of the busy intervals of `resources` (time at least one is busy).
double busy_union(const TaskGraph& graph, const Timeline& timeline,
                  std::span<const ResourceId> resources);

}  // namespace twinsim::engine
