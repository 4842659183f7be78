#pragma once
// The input of the discrete-event engine: tasks with a duration, a category, the
// resources they occupy, and dependency edges. The engine knows nothing about
// transformers; the training simulator builds one TaskGraph per step from its op graph.
//
// Storage is flat (struct of arrays indexed by int ids, names in one buffer) because a
// 1T-parameter plan has millions of tasks and must simulate in well under a second.
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace twinsim::engine {

using TaskId = std::int32_t;
using ResourceId = std::int32_t;
using CategoryId = std::int16_t;

// A stream runs its tasks one at a time in program order, like a CUDA stream.
// A link runs its tasks one at a time in the order they become ready (first come, first
// served), like a shared network link that each transfer saturates. A shared link runs
// every task at once and, while they are more than its capacity, slows each to its fair
// share (a switch uplink that congestion control shares among its flows). See README.md.
enum class ResourceKind : std::uint8_t { Stream, Link, Shared };

struct Resource {
  std::string name;   // e.g. "rank5.compute"
  int rank;           // owning rank (Chrome trace pid), -1 for shared links
  std::string track;  // stream name within the rank (Chrome trace thread), e.g. "compute"
  ResourceKind kind;
  int slots = 1;      // a link: how many tasks it runs at once (each at full rate);
                      // a shared link: how many it runs at full rate (its capacity)
};

class TaskGraph {
 public:
  // --- categories: small caller-defined tags such as "compute", "dp_comm" ---
  // Returns the id of `name`, registering it on first use.
  CategoryId category(std::string_view name);
  int num_categories() const { return static_cast<int>(category_names_.size()); }
  const std::string& category_name(CategoryId c) const { return category_names_[c]; }

  // --- resources ---
  ResourceId add_stream(int rank, std::string_view track);  // named "rank<r>.<track>"
  // A link runs up to `slots` tasks at once, each as if alone (a switch uplink of that many
  // NIC-rate ports); the others wait, first come, first served.
  ResourceId add_link(std::string_view name, int slots = 1);
  // A shared link never holds a task back: n tasks on it (counted with their copies) each
  // progress at min(1, capacity / n) of their full rate, re-timed whenever n changes; a
  // task on several progresses at its most crowded one's share. Identical tasks so stay
  // identical (no first-come order splits them), which is what lets full mode fold them.
  ResourceId add_shared_link(std::string_view name, int capacity);
  int num_resources() const { return static_cast<int>(resources_.size()); }
  const Resource& resource(ResourceId r) const { return resources_[r]; }

  // --- tasks ---
  // `resources` are all occupied for the whole duration: a collective is ONE task on
  // the comm streams of all its participants, so it starts when all are ready.
  TaskId add_task(std::string_view name, double duration_s, CategoryId category,
                  std::span<const ResourceId> resources);
  TaskId add_task(std::string_view name, double duration_s, CategoryId category,
                  std::initializer_list<ResourceId> resources) {
    return add_task(name, duration_s, category, std::span(resources.begin(), resources.size()));
  }
  // The task stands for `copies` identical tasks on shared link `link` (one of its
  // resources): it counts that many toward the link's load (default 1). A folded step
  // graph simulates one of a set of alike transfers and lets it weigh for all of them.
  void set_copies(TaskId t, ResourceId link, int copies);
  // The copies of the task's i-th resource (resources_of(t)[i]).
  int copies(TaskId t, std::size_t i) const {
    return copies_.empty() ? 1 : copies_[resource_begin_[t] + i];
  }
  bool has_shared_links() const { return shared_links_ > 0; }

  // `after` starts only once `before` has finished.
  void add_dependency(TaskId before, TaskId after);

  // Interference: while any stream of `interferers` runs a task, the task running on
  // `slowed` progresses `slowdown` (>= 1) times slower; its remaining work is re-timed
  // whenever that changes. One call per GPU: its compute stream is slowed by the NCCL
  // kernels its communication streams run, which hold SMs (see README.md). A stream is
  // the interferer of at most one slowed stream.
  void add_interference(ResourceId slowed, std::span<const ResourceId> interferers, double slowdown);
  // The slowed stream an interferer slows (-1: none), and a slowed stream's factor (1: none).
  ResourceId interference_target(ResourceId r) const {
    return r < static_cast<ResourceId>(interferes_.size()) ? interferes_[r] : -1;
  }
  double slowdown(ResourceId r) const { return r < static_cast<ResourceId>(slowdown_.size()) ? slowdown_[r] : 1.0; }
  bool has_interference() const { return !interferes_.empty(); }

  // Replaces the program order of a stream (default: the order tasks were added to it).
  // `order` must list every task occupying the stream exactly once.
  void set_program_order(ResourceId stream, std::vector<TaskId> order);

  int num_tasks() const { return static_cast<int>(duration_.size()); }
  std::size_t num_dependencies() const { return edges_.size(); }
  std::string_view name(TaskId t) const;
  double duration(TaskId t) const { return duration_[t]; }
  CategoryId category_of(TaskId t) const { return category_[t]; }
  std::span<const ResourceId> resources_of(TaskId t) const;
  // Tasks on a resource: program order for a stream, insertion order for a link.
  const std::vector<TaskId>& tasks_on(ResourceId r) const { return tasks_on_[r]; }
  // Dependency edges (before, after) in insertion order.
  const std::vector<std::pair<TaskId, TaskId>>& dependencies() const { return edges_; }

  // Pre-sizes the arrays when the caller knows roughly how big the step is.
  void reserve(std::size_t tasks, std::size_t dependencies, std::size_t name_chars);

 private:
  ResourceId add_resource(Resource r);
  void check_task(TaskId t, const char* what) const;

  std::vector<std::string> category_names_;
  std::unordered_map<std::string, CategoryId> category_ids_;

  std::vector<Resource> resources_;
  std::vector<std::vector<TaskId>> tasks_on_;

  // one entry per task
  std::vector<double> duration_;
  std::vector<CategoryId> category_;
  std::vector<std::size_t> name_begin_{0};        // size num_tasks + 1, into names_
  std::vector<std::uint32_t> resource_begin_{0};  // size num_tasks + 1, into task_resources_
  std::string names_;                             // all task names, back to back
  std::vector<ResourceId> task_resources_;
  std::vector<std::int32_t> copies_;  // parallel to task_resources_, empty until set_copies
  int shared_links_ = 0;

  std::vector<std::pair<TaskId, TaskId>> edges_;

  // per resource, sized on the first add_interference
  std::vector<ResourceId> interferes_;  // the slowed stream this one slows, or -1
  std::vector<double> slowdown_;        // a slowed stream's factor, else 1
};

}  // namespace twinsim::engine
