#include "sim/engine/deadlock.hpp"

#include <algorithm>
#include <sstream>

#include "sim/engine/dependency_graph.hpp"

namespace twinsim::engine {

std::vector<TaskId> find_dependency_cycle(const TaskGraph& graph) {
  return find_cycle(to_boost_graph(graph));
}

namespace {

constexpr int kMaxListedHeads = 20;  // keep messages readable for million-task graphs

std::string quoted(const TaskGraph& g, TaskId t) {
  std::string s(1, '\'');
  s.append(g.name(t));
  s.push_back('\'');
  return s;
}

std::vector<std::string> names_of(const TaskGraph& g, const std::vector<int>& tasks) {
  std::vector<std::string> names;
  for (int t : tasks) names.emplace_back(g.name(t));
  return names;
}

std::string arrow_list(const std::vector<std::string>& ops) {
  std::string s;
  for (const auto& op : ops) s += op + " -> ";
  return s + ops.front();
}

// Head of each resource: its first unfinished task in order, or -1 when all ran.
// Streams run strictly in order, so everything before the head has finished.
std::vector<TaskId> resource_heads(const TaskGraph& g, std::span<const std::uint8_t> finished) {
  std::vector<TaskId> head(g.num_resources(), -1);
  for (ResourceId r = 0; r < g.num_resources(); ++r) {
    if (g.resource(r).kind != ResourceKind::Stream) continue;
    for (TaskId t : g.tasks_on(r))
      if (!finished[t]) {
        head[r] = t;
        break;
      }
  }
  return head;
}

// Edge t -> u: unfinished task t cannot start before unfinished task u finishes, either
// because u is a dependency of t or because u is ahead of t on one of t's streams.
DependencyGraph wait_for_graph(const TaskGraph& g, std::span<const std::uint8_t> finished,
                               const std::vector<TaskId>& head) {
  DependencyGraph w(g.num_tasks());
  for (auto [before, after] : g.dependencies())
    if (!finished[before] && !finished[after]) boost::add_edge(after, before, w);
  for (TaskId t = 0; t < g.num_tasks(); ++t) {
    if (finished[t]) continue;
    for (ResourceId r : g.resources_of(t))
      if (head[r] != -1 && head[r] != t) boost::add_edge(t, head[r], w);
  }
  return w;
}

// One line per stuck stream head: what it waits on.
std::string describe_head(const TaskGraph& g, std::span<const std::uint8_t> finished,
                          const std::vector<TaskId>& head, ResourceId r,
                          const std::vector<std::vector<TaskId>>& preds) {
  TaskId h = head[r];
  std::ostringstream line;
  line << "  " << g.resource(r).name << ": head " << quoted(g, h) << " waits for";
  const char* sep = " ";
  for (TaskId p : preds[h])
    if (!finished[p]) {
      line << sep << "dependency " << quoted(g, p);
      sep = ", ";
    }
  for (ResourceId other : g.resources_of(h))
    if (head[other] != -1 && head[other] != h) {
      line << sep << quoted(g, head[other]) << " ahead of it on " << g.resource(other).name;
      sep = ", ";
    }
  return line.str();
}

}  // namespace

void throw_deadlock(const TaskGraph& g, std::span<const std::uint8_t> finished) {
  if (auto cycle = find_dependency_cycle(g); !cycle.empty()) {
    auto ops = names_of(g, cycle);
    throw DeadlockError(DeadlockError::Kind::DependencyCycle, ops,
                        "deadlock: dependency cycle " + arrow_list(ops));
  }

  auto head = resource_heads(g, finished);
  // The dependencies form a DAG, so the waits must close a cycle through program order.
  auto wait_cycle = find_cycle(wait_for_graph(g, finished, head));
  // find_cycle follows "waits for" edges; report each op waiting for the next.
  auto ops = names_of(g, wait_cycle);

  std::vector<std::vector<TaskId>> preds(g.num_tasks());
  for (auto [before, after] : g.dependencies()) preds[after].push_back(before);

  auto not_run = std::count(finished.begin(), finished.end(), std::uint8_t{0});
  std::ostringstream msg;
  msg << "deadlock: " << not_run << " of " << g.num_tasks() << " tasks never ran";
  if (!ops.empty()) msg << "; wait cycle " << arrow_list(ops);
  msg << "\nstuck stream heads:";
  int listed = 0, stuck = 0;
  for (ResourceId r = 0; r < g.num_resources(); ++r) {
    if (head[r] == -1) continue;
    if (++stuck <= kMaxListedHeads) {
      msg << "\n" << describe_head(g, finished, head, r, preds);
      ++listed;
    }
  }
  if (stuck > listed) msg << "\n  ... and " << stuck - listed << " more";
  throw DeadlockError(DeadlockError::Kind::StuckStreams, ops, msg.str());
}

}  // namespace twinsim::engine
