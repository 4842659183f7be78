#include "sim/engine/dependency_graph.hpp"

#include <algorithm>

#include <boost/graph/depth_first_search.hpp>

namespace twinsim::engine {

DependencyGraph to_boost_graph(const TaskGraph& graph) {
  DependencyGraph g(graph.num_tasks());
  for (auto [before, after] : graph.dependencies()) boost::add_edge(before, after, g);
  return g;
}

namespace {

using Vertex = boost::graph_traits<DependencyGraph>::vertex_descriptor;
using EdgeDesc = boost::graph_traits<DependencyGraph>::edge_descriptor;

// Thrown by the visitor to stop the search at the first back edge.
struct FoundBackEdge {
  Vertex from, to;
};

struct CycleVisitor : boost::default_dfs_visitor {
  std::vector<Vertex>* parent;
  void tree_edge(EdgeDesc e, const DependencyGraph& g) const {
    (*parent)[boost::target(e, g)] = boost::source(e, g);
  }
  void back_edge(EdgeDesc e, const DependencyGraph& g) const {
    throw FoundBackEdge{boost::source(e, g), boost::target(e, g)};
  }
};

}  // namespace

std::vector<int> find_cycle(const DependencyGraph& g) {
  std::vector<Vertex> parent(boost::num_vertices(g));
  CycleVisitor visitor;
  visitor.parent = &parent;
  try {
    boost::depth_first_search(g, boost::visitor(visitor));
  } catch (const FoundBackEdge& back) {
    // back.to is a grey ancestor of back.from: walk the tree from back.from up to it.
    std::vector<int> cycle;
    for (Vertex v = back.from; v != back.to; v = parent[v]) cycle.push_back(static_cast<int>(v));
    cycle.push_back(static_cast<int>(back.to));
    std::reverse(cycle.begin(), cycle.end());
    return cycle;
  }
  return {};
}

}  // namespace twinsim::engine
