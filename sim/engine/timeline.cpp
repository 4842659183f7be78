#include "sim/engine/timeline.hpp"

#include <algorithm>
#include <array>

namespace twinsim::engine {
namespace {

// Interval classes for the sweep in exposed_time.
enum Kind { kOfCategory = 0, kOtherCategory = 1, kCovering = 2 };

struct Edge {
  double time;
  int kind;
  int delta;  // +1 at a start, -1 at an end
};

// Collects each task on `resources` once (a collective may sit on several of them).
std::vector<TaskId> tasks_on_any(const TaskGraph& graph, std::span<const ResourceId> resources) {
  std::vector<TaskId> tasks;
  for (ResourceId r : resources)
    tasks.insert(tasks.end(), graph.tasks_on(r).begin(), graph.tasks_on(r).end());
  std::sort(tasks.begin(), tasks.end());
  tasks.erase(std::unique(tasks.begin(), tasks.end()), tasks.end());
  return tasks;
}

void add_interval(std::vector<Edge>& edges, const Timeline& tl, TaskId t, int kind) {
  if (tl.end_s[t] <= tl.start_s[t]) return;  // zero-length tasks cover no time
  edges.push_back({tl.start_s[t], kind, +1});
  edges.push_back({tl.end_s[t], kind, -1});
}

// Sweeps the edges in time order; sums the length of the gaps during which `counts`
// satisfies `counted`.
template <typename Pred>
double sweep(std::vector<Edge>& edges, Pred counted) {
  std::sort(edges.begin(), edges.end(),
            [](const Edge& a, const Edge& b) { return a.time < b.time; });
  std::array<int, 3> counts{};
  double total = 0.0;
  for (std::size_t i = 0; i < edges.size();) {
    double now = edges[i].time;
    for (; i < edges.size() && edges[i].time == now; ++i) counts[edges[i].kind] += edges[i].delta;
    if (i < edges.size() && counted(counts)) total += edges[i].time - now;
  }
  return total;
}

}  // namespace

double exposed_time(const TaskGraph& graph, const Timeline& timeline, CategoryId category,
                    std::span<const ResourceId> watched, std::span<const ResourceId> covering) {
  std::vector<Edge> edges;
  for (TaskId t : tasks_on_any(graph, watched))
    add_interval(edges, timeline, t,
                 graph.category_of(t) == category ? kOfCategory : kOtherCategory);
  for (TaskId t : tasks_on_any(graph, covering)) add_interval(edges, timeline, t, kCovering);
  return sweep(edges, [](const std::array<int, 3>& c) {
    return c[kOfCategory] > 0 && c[kOtherCategory] == 0 && c[kCovering] == 0;
  });
}

std::vector<double> exposed_times(const TaskGraph& graph, const Timeline& timeline,
                                  std::span<const ResourceId> watched, std::span<const ResourceId> covering) {
  // edges carry the category (>= 0) or -1 for covering tasks
  struct CategoryEdge {
    double time;
    int category;
    int delta;
  };
  std::vector<CategoryEdge> edges;
  auto add = [&](TaskId t, int category) {
    if (timeline.end_s[t] <= timeline.start_s[t]) return;
    edges.push_back({timeline.start_s[t], category, +1});
    edges.push_back({timeline.end_s[t], category, -1});
  };
  for (TaskId t : tasks_on_any(graph, watched)) add(t, graph.category_of(t));
  for (TaskId t : tasks_on_any(graph, covering)) add(t, -1);
  std::sort(edges.begin(), edges.end(), [](const CategoryEdge& a, const CategoryEdge& b) { return a.time < b.time; });
  std::vector<int> running(graph.num_categories(), 0);
  std::vector<double> exposed(graph.num_categories(), 0.0);
  int covering_running = 0, categories_running = 0;
  for (std::size_t i = 0; i < edges.size();) {
    const double now = edges[i].time;
    for (; i < edges.size() && edges[i].time == now; ++i) {
      const CategoryEdge& e = edges[i];
      if (e.category < 0) {
        covering_running += e.delta;
        continue;
      }
      const int before = running[e.category];
      running[e.category] += e.delta;
      categories_running += (running[e.category] > 0) - (before > 0);
    }
    if (i == edges.size() || covering_running > 0 || categories_running != 1) continue;
    for (std::size_t c = 0; c < running.size(); ++c)
      if (running[c] > 0) exposed[c] += edges[i].time - now;
  }
  return exposed;
}

double busy_union(const TaskGraph& graph, const Timeline& timeline,
                  std::span<const ResourceId> resources) {
  std::vector<Edge> edges;
  for (TaskId t : tasks_on_any(graph, resources)) add_interval(edges, timeline, t, kOfCategory);
  return sweep(edges, [](const std::array<int, 3>& c) { return c[kOfCategory] > 0; });
}

}  // namespace twinsim::engine
