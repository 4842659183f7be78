#include "sim/engine/task_graph.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace twinsim::engine {
namespace {

// A resource listed twice, or -1. Pairwise for the usual one to eight resources (no
// allocation per task); by sorting a copy for collectives over many ranks.
ResourceId find_duplicate(std::span<const ResourceId> resources) {
  if (resources.size() <= 16) {
    for (std::size_t i = 1; i < resources.size(); ++i)
      for (std::size_t j = 0; j < i; ++j)
        if (resources[i] == resources[j]) return resources[i];
    return -1;
  }
  std::vector<ResourceId> sorted(resources.begin(), resources.end());
  std::sort(sorted.begin(), sorted.end());
  auto dup = std::adjacent_find(sorted.begin(), sorted.end());
  return dup == sorted.end() ? -1 : *dup;
}

}  // namespace

CategoryId TaskGraph::category(std::string_view name) {
  auto it = category_ids_.find(std::string(name));
  if (it != category_ids_.end()) return it->second;
  if (category_names_.size() >= static_cast<std::size_t>(std::numeric_limits<CategoryId>::max()))
    throw std::length_error("TaskGraph: too many categories");
  auto id = static_cast<CategoryId>(category_names_.size());
  category_names_.emplace_back(name);
  category_ids_.emplace(std::string(name), id);
  return id;
}

ResourceId TaskGraph::add_resource(Resource r) {
  resources_.push_back(std::move(r));
  tasks_on_.emplace_back();
  return static_cast<ResourceId>(resources_.size() - 1);
}

ResourceId TaskGraph::add_stream(int rank, std::string_view track) {
  if (rank < 0) throw std::invalid_argument("TaskGraph::add_stream: rank must be >= 0");
  std::string name = "rank" + std::to_string(rank) + "." + std::string(track);
  return add_resource({std::move(name), rank, std::string(track), ResourceKind::Stream});
}

ResourceId TaskGraph::add_link(std::string_view name, int slots) {
  if (slots < 1) throw std::invalid_argument("TaskGraph::add_link: link '" + std::string(name) + "' needs slots >= 1");
  return add_resource({std::string(name), -1, std::string(name), ResourceKind::Link, slots});
}

ResourceId TaskGraph::add_shared_link(std::string_view name, int capacity) {
  if (capacity < 1)
    throw std::invalid_argument("TaskGraph::add_shared_link: link '" + std::string(name) + "' needs capacity >= 1");
  ++shared_links_;
  return add_resource({std::string(name), -1, std::string(name), ResourceKind::Shared, capacity});
}

void TaskGraph::set_copies(TaskId t, ResourceId link, int copies) {
  check_task(t, "set_copies");
  if (copies < 1) throw std::invalid_argument("TaskGraph::set_copies: copies must be >= 1");
  const auto on = resources_of(t);
  const auto it = std::find(on.begin(), on.end(), link);
  if (it == on.end() || resources_[link].kind != ResourceKind::Shared)
    throw std::invalid_argument("TaskGraph::set_copies: task '" + std::string(name(t)) +
                                "' is not on a shared link with id " + std::to_string(link));
  if (copies_.empty()) copies_.assign(task_resources_.size(), 1);
  copies_[resource_begin_[t] + static_cast<std::size_t>(it - on.begin())] = copies;
}

TaskId TaskGraph::add_task(std::string_view name, double duration_s, CategoryId category,
                           std::span<const ResourceId> resources) {
  if (!(duration_s >= 0.0) || duration_s == std::numeric_limits<double>::infinity())
    throw std::invalid_argument("TaskGraph::add_task: task '" + std::string(name) +
                                "' has duration " + std::to_string(duration_s) +
                                ", expected a finite value >= 0");
  if (category < 0 || category >= num_categories())
    throw std::invalid_argument("TaskGraph::add_task: task '" + std::string(name) +
                                "' has an unknown category");
  if (resources.empty())
    throw std::invalid_argument("TaskGraph::add_task: task '" + std::string(name) +
                                "' occupies no resource");
  if (duration_.size() >= static_cast<std::size_t>(std::numeric_limits<TaskId>::max()))
    throw std::length_error("TaskGraph: too many tasks");

  for (ResourceId r : resources)
    if (r < 0 || r >= num_resources())
      throw std::invalid_argument("TaskGraph::add_task: task '" + std::string(name) +
                                  "' names an unknown resource");
  // Occupying a stream twice would make the task wait for itself.
  if (auto dup = find_duplicate(resources); dup >= 0)
    throw std::invalid_argument("TaskGraph::add_task: task '" + std::string(name) +
                                "' lists resource '" + resources_[dup].name + "' twice");

  auto id = static_cast<TaskId>(duration_.size());
  for (ResourceId r : resources) {
    task_resources_.push_back(r);
    if (!copies_.empty()) copies_.push_back(1);
    tasks_on_[r].push_back(id);
  }
  resource_begin_.push_back(static_cast<std::uint32_t>(task_resources_.size()));

  duration_.push_back(duration_s);
  category_.push_back(category);
  names_.append(name);
  name_begin_.push_back(names_.size());
  return id;
}

void TaskGraph::check_task(TaskId t, const char* what) const {
  if (t < 0 || t >= num_tasks())
    throw std::invalid_argument(std::string("TaskGraph::") + what + ": unknown task id " +
                                std::to_string(t));
}

void TaskGraph::add_dependency(TaskId before, TaskId after) {
  check_task(before, "add_dependency");
  check_task(after, "add_dependency");
  edges_.emplace_back(before, after);
}

void TaskGraph::set_program_order(ResourceId stream, std::vector<TaskId> order) {
  if (stream < 0 || stream >= num_resources() || resources_[stream].kind != ResourceKind::Stream)
    throw std::invalid_argument("TaskGraph::set_program_order: not a stream");
  std::vector<TaskId> want = tasks_on_[stream], got = order;
  std::sort(want.begin(), want.end());
  std::sort(got.begin(), got.end());
  if (want != got)
    throw std::invalid_argument("TaskGraph::set_program_order: the order for '" +
                                resources_[stream].name +
                                "' must list every task on that stream exactly once");
  tasks_on_[stream] = std::move(order);
}

std::string_view TaskGraph::name(TaskId t) const {
  return std::string_view(names_).substr(name_begin_[t], name_begin_[t + 1] - name_begin_[t]);
}

std::span<const ResourceId> TaskGraph::resources_of(TaskId t) const {
  return std::span(task_resources_).subspan(resource_begin_[t],
                                            resource_begin_[t + 1] - resource_begin_[t]);
}

void TaskGraph::reserve(std::size_t tasks, std::size_t dependencies, std::size_t name_chars) {
  duration_.reserve(tasks);
  category_.reserve(tasks);
  name_begin_.reserve(tasks + 1);
  resource_begin_.reserve(tasks + 1);
  task_resources_.reserve(tasks);
  names_.reserve(name_chars);
  edges_.reserve(dependencies);
}

void TaskGraph::add_interference(ResourceId slowed, std::span<const ResourceId> interferers, double slowdown) {
  const auto n = static_cast<std::size_t>(num_resources());
  interferes_.resize(n, -1);
  slowdown_.resize(n, 1.0);
  auto check_stream = [&](ResourceId r) {
    if (r < 0 || r >= num_resources() || resources_[r].kind != ResourceKind::Stream)
      throw std::invalid_argument("add_interference: resource " + std::to_string(r) + " is not a stream");
  };
  check_stream(slowed);
  if (!(slowdown >= 1.0)) throw std::invalid_argument("add_interference: slowdown must be >= 1");
  slowdown_[slowed] = slowdown;
  for (ResourceId r : interferers) {
    check_stream(r);
    if (r == slowed || interferes_[r] != -1)
      throw std::invalid_argument("add_interference: stream " + resources_[r].name + " already interferes");
    interferes_[r] = slowed;
  }
}

}  // namespace twinsim::engine
