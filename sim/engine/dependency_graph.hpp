#pragma once
// The dependency graph of a TaskGraph as a Boost.Graph, for validation and analysis
// (cycle detection, topological order). Vertex i is TaskId i. The engine's hot loop does
// not use it: it runs on flat successor arrays (simulator.cpp).
#include <vector>

#include <boost/graph/adjacency_list.hpp>

#include "sim/engine/task_graph.hpp"

namespace twinsim::engine {

using DependencyGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;

DependencyGraph to_boost_graph(const TaskGraph& graph);

// Vertices of one directed cycle of `g` in edge order (v0 -> v1 -> ... -> v0), or empty
// if `g` is acyclic. Depth-first search: a back edge closes a cycle.
std::vector<int> find_cycle(const DependencyGraph& g);

}  // namespace twinsim::engine
