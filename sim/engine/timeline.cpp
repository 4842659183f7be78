#include "sim/engine/timeline.hpp"

#include <algorithm>
#include <array>

namespace twinsim::engine {
namespace {

// Interval classes for the sweep in exposed_time.
enum Kind { kOfCategory = 0, kOtherCategory = 1, kCovering = 2 };

// A task's start (+1) or end (-1); `tag` is a Kind, or a category (-1: covering) in
// exposed_times.
struct Edge {
  double time;
  int tag;
  int delta;
};

// Collects each task on `resources` once (a collective may sit on several of them). One
// resource's tasks come as it lists them: a stream's in program order.
std::vector<TaskId> tasks_on_any(const TaskGraph& graph, std::span<const ResourceId> resources) {
  if (resources.size() == 1) return graph.tasks_on(resources[0]);
  std::vector<TaskId> tasks;
  for (ResourceId r : resources)
    tasks.insert(tasks.end(), graph.tasks_on(r).begin(), graph.tasks_on(r).end());
  std::sort(tasks.begin(), tasks.end());
  tasks.erase(std::unique(tasks.begin(), tasks.end()), tasks.end());
  return tasks;
}

// The start and end edges of the tasks on `resources`, in time order, each tagged by
// `tag_of(task)`. A stream runs its tasks one at a time in program order, so one stream's
// edges come sorted already (the compute stream's: most of a step's tasks) and are not
// sorted again.
template <typename TagOf>
std::vector<Edge> edges_in_time_order(const TaskGraph& graph, const Timeline& tl,
                                      std::span<const ResourceId> resources, TagOf tag_of) {
  std::vector<Edge> edges;
  const std::vector<TaskId> tasks = tasks_on_any(graph, resources);
  edges.reserve(2 * tasks.size());
  for (TaskId t : tasks) {
    if (tl.end_s[t] <= tl.start_s[t]) continue;  // zero-length tasks cover no time
    edges.push_back({tl.start_s[t], tag_of(t), +1});
    edges.push_back({tl.end_s[t], tag_of(t), -1});
  }
  const auto earlier = [](const Edge& a, const Edge& b) { return a.time < b.time; };
  if (!std::is_sorted(edges.begin(), edges.end(), earlier)) std::sort(edges.begin(), edges.end(), earlier);
  return edges;
}

// The two groups' edges in one time order.
std::vector<Edge> merged(const std::vector<Edge>& a, const std::vector<Edge>& b) {
  std::vector<Edge> out(a.size() + b.size());
  std::merge(a.begin(), a.end(), b.begin(), b.end(), out.begin(),
             [](const Edge& x, const Edge& y) { return x.time < y.time; });
  return out;
}

// Sweeps the edges in time order; sums the length of the gaps during which `counts`
// satisfies `counted`.
template <typename Pred>
double sweep(const std::vector<Edge>& edges, Pred counted) {
  std::array<int, 3> counts{};
  double total = 0.0;
  for (std::size_t i = 0; i < edges.size();) {
    double now = edges[i].time;
    for (; i < edges.size() && edges[i].time == now; ++i) counts[edges[i].tag] += edges[i].delta;
    if (i < edges.size() && counted(counts)) total += edges[i].time - now;
  }
  return total;
}

}  // namespace

double exposed_time(const TaskGraph& graph, const Timeline& timeline, CategoryId category,
                    std::span<const ResourceId> watched, std::span<const ResourceId> covering) {
  const auto kind = [&](TaskId t) { return graph.category_of(t) == category ? kOfCategory : kOtherCategory; };
  const auto edges = merged(edges_in_time_order(graph, timeline, watched, kind),
                            edges_in_time_order(graph, timeline, covering, [](TaskId) { return kCovering; }));
  return sweep(edges, [](const std::array<int, 3>& c) {
    return c[kOfCategory] > 0 && c[kOtherCategory] == 0 && c[kCovering] == 0;
  });
}

std::vector<double> exposed_times(const TaskGraph& graph, const Timeline& timeline,
                                  std::span<const ResourceId> watched, std::span<const ResourceId> covering) {
  // edges carry the category (>= 0) or -1 for covering tasks
  const auto edges =
      merged(edges_in_time_order(graph, timeline, watched, [&](TaskId t) { return int{graph.category_of(t)}; }),
             edges_in_time_order(graph, timeline, covering, [](TaskId) { return -1; }));
  std::vector<int> running(graph.num_categories(), 0);
  std::vector<double> exposed(graph.num_categories(), 0.0);
  int covering_running = 0, categories_running = 0;
  for (std::size_t i = 0; i < edges.size();) {
    const double now = edges[i].time;
    for (; i < edges.size() && edges[i].time == now; ++i) {
      const Edge& e = edges[i];
      if (e.tag < 0) {
        covering_running += e.delta;
        continue;
      }
      const int before = running[e.tag];
      running[e.tag] += e.delta;
      categories_running += (running[e.tag] > 0) - (before > 0);
    }
    if (i == edges.size() || covering_running > 0 || categories_running != 1) continue;
    for (std::size_t c = 0; c < running.size(); ++c)
      if (running[c] > 0) exposed[c] += edges[i].time - now;
  }
  return exposed;
}

double busy_union(const TaskGraph& graph, const Timeline& timeline,
                  std::span<const ResourceId> resources) {
  const auto edges = edges_in_time_order(graph, timeline, resources, [](TaskId) { return kOfCategory; });
  return sweep(edges, [](const std::array<int, 3>& c) { return c[kOfCategory] > 0; });
}

}  // namespace twinsim::engine
