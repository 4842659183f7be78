#include "sim/engine/simulator.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

#include "sim/engine/deadlock.hpp"
#include "sim/engine/event_queue.hpp"

namespace twinsim::engine {
namespace {

// Compressed sparse rows: the items of row i are items[begin[i] .. begin[i+1]).
struct Csr {
  std::vector<std::uint32_t> begin;
  std::vector<TaskId> items;
  std::span<const TaskId> row(int i) const {
    return std::span(items).subspan(begin[i], begin[i + 1] - begin[i]);
  }
};

// Successor lists built from the edge list with a counting sort (no per-task allocation).
Csr successors(const TaskGraph& g) {
  Csr csr;
  csr.begin.assign(g.num_tasks() + 1, 0);
  for (auto [before, after] : g.dependencies()) ++csr.begin[before + 1];
  for (int t = 0; t < g.num_tasks(); ++t) csr.begin[t + 1] += csr.begin[t];
  csr.items.resize(g.dependencies().size());
  std::vector<std::uint32_t> fill(csr.begin.begin(), csr.begin.end() - 1);
  for (auto [before, after] : g.dependencies()) csr.items[fill[before]++] = after;
  return csr;
}

// The engine's mutable state. Each task carries one counter of the things it still
// waits for (unfinished dependencies + streams on which it is not yet the head);
// it becomes ready when the counter reaches zero.
class Engine {
 public:
  explicit Engine(const TaskGraph& g, Exchange* exchange = nullptr,
                  const std::function<int(int)>& process_of_rank = nullptr)
      : g_(g), ex_(exchange), succ_(successors(g)), waits_(g.num_tasks(), 0), finished_(g.num_tasks(), 0),
        stream_pos_(g.num_resources(), 0), link_in_use_(g.num_resources(), 0),
        link_waiters_(g.num_resources()), link_dirty_(g.num_resources(), 0),
        waiting_for_link_(g.num_tasks(), 0), candidate_(g.num_tasks(), 0), ready_s_(g.num_tasks(), 0.0) {
    for (ResourceId r = 0; r < g.num_resources(); ++r) {
      is_stream_.push_back(g.resource(r).kind == ResourceKind::Stream);
      is_shared_.push_back(g.resource(r).kind == ResourceKind::Shared);
      link_slots_.push_back(g.resource(r).slots);
    }
    tl_.start_s.assign(g.num_tasks(), 0.0);
    tl_.end_s.assign(g.num_tasks(), 0.0);
    interference_ = g.has_interference();
    retimed_ = interference_ || g.has_shared_links();
    if (interference_) {
      running_on_.assign(g.num_resources(), -1);
      busy_interferers_.assign(g.num_resources(), 0);
    }
    if (retimed_) {
      work_left_.assign(g.num_tasks(), 0.0);
      since_.assign(g.num_tasks(), 0.0);
      factor_.assign(g.num_tasks(), 1.0);
      slow_.assign(g.num_tasks(), 1.0);
    }
    if (g.has_shared_links()) {
      load_.assign(g.num_resources(), 0);
      retimed_load_.assign(g.num_resources(), 0);
      running_shared_.resize(g.num_resources());
      shared_dirty_.assign(g.num_resources(), 0);
    }
    for (auto [before, after] : g.dependencies()) ++waits_[after];
    for (ResourceId r = 0; r < g.num_resources(); ++r) {
      if (!is_stream(r)) continue;
      const auto& order = g.tasks_on(r);
      for (std::size_t i = 1; i < order.size(); ++i) ++waits_[order[i]];
    }
    queue_.reserve(g.num_resources() + 1);
    if (ex_) assign_owners(process_of_rank);
  }

  Timeline run() {
    if (ex_) return run_parallel();
    for (TaskId t = 0; t < g_.num_tasks(); ++t)
      if (waits_[t] == 0) on_ready(t);
    grant_links();
    retime_shared();
    while (!queue_.empty()) {
      Event e = queue_.pop();
      // a task re-timed (interference, a shared link) left its earlier finish events behind
      const bool stale = retimed_ && (finished_[e.task] || e.time != tl_.end_s[e.task]);
      if (!stale) {
        now_ = e.time;
        on_finish(e.task);
        ++tl_.events;
      }
      // the instant is over once every event at it is processed: now links are granted
      if (queue_.empty() || queue_.next_time() > now_) grant_links(), retime_shared();
    }
    if (finished_count_ != g_.num_tasks()) throw_deadlock(g_, finished_);
    summarize();
    return std::move(tl_);
  }

  // --- split over processes (simulate(graph, exchange, ...)) ---

  // A task belongs to the process of its first stream's rank; one on links only (a
  // pipeline transfer) to that of its first predecessor.
  void assign_owners(const std::function<int(int)>& process_of_rank) {
    me_ = ex_->process();
    owner_.assign(g_.num_tasks(), -1);
    for (TaskId t = 0; t < g_.num_tasks(); ++t)
      for (ResourceId r : g_.resources_of(t))
        if (is_stream(r)) {
          owner_[t] = process_of_rank(g_.resource(r).rank);
          break;
        }
    for (bool changed = true; changed;) {
      changed = false;
      for (auto [before, after] : g_.dependencies())
        if (owner_[after] < 0 && owner_[before] >= 0) owner_[after] = owner_[before], changed = true;
    }
    for (int& o : owner_) o = o < 0 ? 0 : o;
  }
  bool mine(TaskId t) const { return !ex_ || owner_[t] == me_; }

  bool stale(const Event& e) const {
    return retimed_ && (finished_[e.task] || e.time != tl_.end_s[e.task]);
  }

  // The instants are global: every process processes the earliest one any has, shares what
  // finished until no process has anything left at it, then all grant links together.
  Timeline run_parallel() {
    check_same_graph();
    for (TaskId t = 0; t < g_.num_tasks(); ++t)
      if (mine(t) && waits_[t] == 0) on_ready(t);
    grant_links_shared();
    retime_shared();
    constexpr double kNever = std::numeric_limits<double>::infinity();
    std::vector<std::int32_t> done;
    for (;;) {
      while (!queue_.empty() && stale(queue_.top())) queue_.pop();
      const double next = ex_->min_all(queue_.empty() ? kNever : queue_.next_time());
      if (next == kNever) break;
      now_ = next;
      for (bool more = true; more;) {
        done.clear();
        while (!queue_.empty() && queue_.next_time() == now_) {
          const Event e = queue_.pop();
          if (stale(e)) continue;
          finish_locally(e.task);
          done.push_back(e.task);
        }
        for (std::int32_t t : ex_->gather_all(done)) finish_everywhere(checked(t));
        while (!queue_.empty() && stale(queue_.top())) queue_.pop();
        more = ex_->any_all(!queue_.empty() && queue_.next_time() == now_);
      }
      grant_links_shared();
      retime_shared();
    }
    return gather_timeline();
  }

  // What only the owner does when its task ends: its streams' next tasks move up.
  void finish_locally(TaskId t) {
    finished_[t] = 1;
    ++finished_count_;
    ++tl_.events;
    if (interference_) finish_interfering(t);
    for (ResourceId r : g_.resources_of(t)) {
      if (!is_stream(r)) continue;
      const auto& order = g_.tasks_on(r);
      if (++stream_pos_[r] < order.size()) release(order[stream_pos_[r]]);
    }
  }

  // What every process does when any task ends: releases its own successors, and frees the
  // task's links in the link state every process keeps.
  void finish_everywhere(TaskId t) {
    for (TaskId s : succ_.row(t))
      if (mine(s)) release(s);
    release_links(t);
  }

  // grant_links over all processes: each offers its own waiters that could start, all
  // order the offers alike and take links in that order, each starting its own tasks.
  void grant_links_shared() {
    collect_candidates();
    std::vector<double> ready;
    for (TaskId t : candidates_) ready.push_back(ready_s_[t]), candidate_[t] = 0;
    const std::vector<std::int32_t> ids = ex_->gather_all(candidates_);
    const std::vector<double> at = ex_->gather_all(ready);
    if (at.size() != ids.size()) disagree("sent " + std::to_string(ids.size()) + " tasks with " + std::to_string(at.size()) + " times");
    std::vector<std::size_t> order(ids.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return at[a] != at[b] ? at[a] < at[b] : ids[a] < ids[b];
    });
    for (std::size_t i : order) {
      const TaskId t = checked(ids[i]);
      if (!links_free(t)) continue;
      if (mine(t)) {
        start(t);
        continue;
      }
      take_links(t);
    }
  }

  // Every process's start and end times, so each holds the whole timeline.
  Timeline gather_timeline() {
    std::vector<std::int32_t> ids;
    std::vector<double> times;
    for (TaskId t = 0; t < g_.num_tasks(); ++t)
      if (mine(t) && finished_[t]) ids.push_back(t), times.push_back(tl_.start_s[t]), times.push_back(tl_.end_s[t]);
    const std::vector<double> events = ex_->gather_all(std::vector<double>{static_cast<double>(tl_.events)});
    const std::vector<std::int32_t> all_ids = ex_->gather_all(ids);
    const std::vector<double> all_times = ex_->gather_all(times);
    if (all_times.size() != 2 * all_ids.size())
      disagree("sent " + std::to_string(all_ids.size()) + " tasks with " + std::to_string(all_times.size()) + " times");
    std::fill(finished_.begin(), finished_.end(), 0);
    for (std::size_t i = 0; i < all_ids.size(); ++i) {
      finished_[checked(all_ids[i])] = 1;
      tl_.start_s[all_ids[i]] = all_times[2 * i];
      tl_.end_s[all_ids[i]] = all_times[2 * i + 1];
    }
    tl_.events = 0;
    for (double e : events) tl_.events += static_cast<std::uint64_t>(e);
    if (all_ids.size() != static_cast<std::size_t>(g_.num_tasks())) throw_deadlock(g_, finished_);
    summarize();
    return std::move(tl_);
  }

 private:
  bool is_stream(ResourceId r) const { return is_stream_[r]; }

  // --- what the processes send is checked before it indexes this process's state ---

  [[noreturn]] static void disagree(const std::string& what) {
    throw std::runtime_error("the processes of this split simulation disagree: " + what +
                             " (every process must be given the same scenario, --set and options)");
  }

  // Every process builds the step graph from its own inputs; the task ids they send index
  // into it, so all must hold the same one. Each sees every process's shape, compares it
  // with process 0's, and all stop with the same message.
  void check_same_graph() {
    const std::vector<std::int32_t> mine{g_.num_tasks(), g_.num_resources(),
                                         static_cast<std::int32_t>(g_.dependencies().size())};
    const std::vector<std::int32_t> all = ex_->gather_all(mine);
    if (all.size() != mine.size() * static_cast<std::size_t>(ex_->processes()))
      disagree("they sent " + std::to_string(all.size()) + " numbers for their graphs' shapes");
    const auto shape = [&](std::size_t p) {
      return std::to_string(all[3 * p]) + " tasks, " + std::to_string(all[3 * p + 1]) + " resources and " +
             std::to_string(all[3 * p + 2]) + " dependencies";
    };
    for (std::size_t p = 1; p < all.size() / 3; ++p)
      if (!std::equal(all.begin(), all.begin() + 3, all.begin() + 3 * p))
        disagree("process 0's step graph has " + shape(0) + ", process " + std::to_string(p) + "'s " + shape(p));
  }

  TaskId checked(std::int32_t t) const {
    if (t < 0 || t >= g_.num_tasks())
      disagree("a process sent task " + std::to_string(t) + ", outside the graph's " + std::to_string(g_.num_tasks()) +
               " tasks");
    return t;
  }

  void release(TaskId t) {
    if (--waits_[t] == 0) on_ready(t);
  }

  // Dependencies done and head of all its streams: only links can hold it back now. A
  // task without links starts at once; one with links waits for the end of the instant.
  void on_ready(TaskId t) {
    bool has_link = false;
    for (ResourceId r : g_.resources_of(t))
      if (!is_stream(r)) {
        has_link = true;
        link_waiters_[r].push_back(t);
        mark_dirty(r);
      }
    if (!has_link) return start(t);
    waiting_for_link_[t] = 1;
    ready_s_[t] = now_;
  }

  // The waiters of the links that changed this instant whose links are all free now.
  void collect_candidates() {
    candidates_.clear();
    for (ResourceId r : dirty_links_) {
      link_dirty_[r] = 0;
      auto& queue = link_waiters_[r];
      std::size_t kept = 0;
      for (TaskId t : queue) {
        if (!waiting_for_link_[t]) continue;  // started through another of its links
        queue[kept++] = t;
        if (!link_full(r) && links_free(t) && !candidate_[t]) candidate_[t] = 1, candidates_.push_back(t);
      }
      queue.resize(kept);
    }
    dirty_links_.clear();
  }

  void mark_dirty(ResourceId link) {
    if (!link_dirty_[link]) link_dirty_[link] = 1, dirty_links_.push_back(link);
  }

  // At the end of an instant (every finish at it processed, so every link released at it
  // is free), the waiters of the links that changed start in the order they became ready,
  // ties by task id, each if all its links are free: first come, first served, and a link
  // never idles while a waiter could use it. The order does not depend on the order the
  // engine processed the instant's events, so symmetric ranks stay symmetric
  // (sim/training/replica_symmetry.hpp relies on it).
  void grant_links() {
    collect_candidates();
    std::sort(candidates_.begin(), candidates_.end(), [this](TaskId a, TaskId b) {
      return ready_s_[a] != ready_s_[b] ? ready_s_[a] < ready_s_[b] : a < b;
    });
    for (TaskId t : candidates_) {
      candidate_[t] = 0;
      if (links_free(t)) start(t);
    }
  }

  // a shared link is never full: it slows its tasks instead (retime_shared)
  bool link_full(ResourceId r) const { return !is_shared_[r] && link_in_use_[r] >= link_slots_[r]; }

  // A task takes its links as it starts: a slot of each FIFO link, its copies' share of each
  // shared link's load. Every process of a split run keeps this state for every task.
  void take_links(TaskId t) {
    const auto on = g_.resources_of(t);
    for (std::size_t i = 0; i < on.size(); ++i) {
      const ResourceId r = on[i];
      if (is_stream(r)) continue;
      ++link_in_use_[r];
      if (is_shared_[r]) load_[r] += g_.copies(t, i), mark_shared_dirty(r);
    }
  }

  void release_links(TaskId t) {
    const auto on = g_.resources_of(t);
    for (std::size_t i = 0; i < on.size(); ++i) {
      const ResourceId r = on[i];
      if (is_stream(r)) continue;
      --link_in_use_[r];
      mark_dirty(r);
      if (!is_shared_[r]) continue;
      load_[r] -= g_.copies(t, i);
      mark_shared_dirty(r);
      auto& running = running_shared_[r];
      if (const auto it = std::find(running.begin(), running.end(), t); it != running.end()) {
        *it = running.back();
        running.pop_back();
      }
    }
  }

  void mark_shared_dirty(ResourceId r) {
    if (!shared_dirty_[r]) shared_dirty_[r] = 1, dirty_shared_.push_back(r);
  }

  // How many times slower than alone a task runs on its most crowded shared link.
  double congestion(TaskId t) const {
    double most = 1.0;
    for (ResourceId r : g_.resources_of(t))
      if (is_shared_[r]) most = std::max(most, static_cast<double>(load_[r]) / link_slots_[r]);
    return most;
  }

  // At the end of an instant (every start and finish at it done, so each shared link's load
  // is final and the order the engine met them does not matter), the tasks running on a
  // shared link whose load changed go on at their new share.
  // A link whose load ends the instant where it began it, or under its capacity before
  // and after, changed no one's share.
  void retime_shared() {
    for (ResourceId r : dirty_shared_) {
      shared_dirty_[r] = 0;
      const std::int64_t before = retimed_load_[r], cap = link_slots_[r];
      retimed_load_[r] = load_[r];
      if (load_[r] == before || (load_[r] <= cap && before <= cap)) continue;
      for (TaskId t : running_shared_[r]) retime_task(t);
    }
    dirty_shared_.clear();
    // a task that started this instant saw the loads of the tasks granted before it only
    for (TaskId t : fresh_) retime_task(t);
    fresh_.clear();
  }

  bool links_free(TaskId t) const {
    for (ResourceId r : g_.resources_of(t))
      if (!is_stream(r) && link_full(r)) return false;
    return true;
  }

  void start(TaskId t) {
    waiting_for_link_[t] = 0;
    take_links(t);
    tl_.start_s[t] = now_;
    tl_.end_s[t] = now_ + g_.duration(t);
    if (retimed_) return start_retimed(t);
    queue_.push(tl_.end_s[t], t);
  }

  // A task whose speed can change while it runs: 1/slow_ of its speed from interference
  // (TaskGraph::add_interference: on a slowed stream while any of its interferers is
  // busy), and its share of its most crowded shared link.
  void start_retimed(TaskId t) {
    work_left_[t] = g_.duration(t);
    since_[t] = now_;
    slow_[t] = 1.0;
    for (ResourceId r : g_.resources_of(t)) {
      if (is_shared_[r]) running_shared_[r].push_back(t), fresh_.push_back(t);
      if (!interference_ || g_.slowdown(r) <= 1.0) continue;
      running_on_[r] = t;
      if (busy_interferers_[r] > 0) slow_[t] = g_.slowdown(r);
    }
    factor_[t] = slow_[t] * (load_.empty() ? 1.0 : congestion(t));
    tl_.end_s[t] = now_ + work_left_[t] * factor_[t];
    queue_.push(tl_.end_s[t], t);
    if (!interference_) return;
    for (ResourceId r : g_.resources_of(t)) {
      const ResourceId slowed = g_.interference_target(r);
      if (slowed >= 0 && busy_interferers_[slowed]++ == 0) retime(slowed, g_.slowdown(slowed));
    }
  }

  void finish_interfering(TaskId t) {
    for (ResourceId r : g_.resources_of(t)) {
      if (running_on_[r] == t) running_on_[r] = -1;
      const ResourceId slowed = g_.interference_target(r);
      if (slowed >= 0 && --busy_interferers_[slowed] == 0) retime(slowed, 1.0);
    }
  }

  // The task running on `slowed` goes on slowed by `slowdown` from now.
  void retime(ResourceId slowed, double slowdown) {
    const TaskId t = running_on_[slowed];
    if (t < 0) return;
    slow_[t] = slowdown;
    retime_task(t);
  }

  // The task goes on at its current factor from now: its work so far is charged at the
  // old factor, its new end pushed (the old one is skipped when popped).
  void retime_task(TaskId t) {
    const double factor = slow_[t] * (load_.empty() ? 1.0 : congestion(t));
    if (factor_[t] == factor) return;
    work_left_[t] = std::max(0.0, work_left_[t] - (now_ - since_[t]) / factor_[t]);
    since_[t] = now_;
    factor_[t] = factor;
    tl_.end_s[t] = now_ + work_left_[t] * factor;
    queue_.push(tl_.end_s[t], t);
  }

  void on_finish(TaskId t) {
    finished_[t] = 1;
    ++finished_count_;
    if (interference_) finish_interfering(t);
    for (TaskId s : succ_.row(t)) release(s);
    for (ResourceId r : g_.resources_of(t)) {
      if (!is_stream(r)) continue;
      // t was the head of r; the next task in program order moves up.
      const auto& order = g_.tasks_on(r);
      if (++stream_pos_[r] < order.size()) release(order[stream_pos_[r]]);
    }
    release_links(t);
  }

  void summarize() {
    tl_.resource_busy_s.assign(g_.num_resources(), 0.0);
    tl_.category_total_s.assign(g_.num_categories(), 0.0);
    if (retimed_) {
      tl_.slowed_s.assign(g_.num_tasks(), 0.0);
      for (TaskId t = 0; t < g_.num_tasks(); ++t)
        tl_.slowed_s[t] = std::max(0.0, tl_.end_s[t] - tl_.start_s[t] - g_.duration(t));
    }
    for (TaskId t = 0; t < g_.num_tasks(); ++t) {
      tl_.makespan_s = std::max(tl_.makespan_s, tl_.end_s[t]);
      tl_.category_total_s[g_.category_of(t)] += g_.duration(t);
      for (ResourceId r : g_.resources_of(t)) tl_.resource_busy_s[r] += g_.duration(t);
    }
  }

  const TaskGraph& g_;
  Exchange* ex_ = nullptr;    // split over processes: what they share; null when alone
  std::vector<int> owner_;    // per task: the process simulating it (split runs only)
  int me_ = 0;
  Csr succ_;
  std::vector<std::uint8_t> is_stream_, is_shared_;  // per resource, cached off the cold Resource struct
  std::vector<std::int32_t> waits_;
  std::vector<std::uint8_t> finished_;
  int finished_count_ = 0;
  std::vector<std::size_t> stream_pos_;
  std::vector<int> link_in_use_, link_slots_;  // per link: tasks running on it, and how many it takes
  std::vector<std::vector<TaskId>> link_waiters_;  // per link, in arrival order
  std::vector<std::uint8_t> link_dirty_;           // per link: released or waited for this instant
  std::vector<ResourceId> dirty_links_;
  std::vector<std::uint8_t> waiting_for_link_, candidate_;
  std::vector<double> ready_s_;                    // when a task waiting for links became ready
  std::vector<TaskId> candidates_;
  EventQueue queue_;
  double now_ = 0.0;
  // interference only (empty otherwise)
  bool interference_ = false;
  std::vector<TaskId> running_on_;        // per slowed stream: its running task, or -1
  std::vector<int> busy_interferers_;     // per slowed stream: interferers running a task
  // interference or shared links (empty otherwise): per task, its work left since `since_`,
  // the factor it runs slower than alone, and the part of it interference adds
  bool retimed_ = false;
  std::vector<double> work_left_, since_, factor_, slow_;
  // shared links only (empty otherwise): per link, the copies running on it, this process's
  // tasks running on it, and whether its load changed this instant
  std::vector<std::int64_t> load_, retimed_load_;  // now, and when its tasks were last re-timed
  std::vector<std::vector<TaskId>> running_shared_;
  std::vector<std::uint8_t> shared_dirty_;
  std::vector<ResourceId> dirty_shared_;
  std::vector<TaskId> fresh_;  // tasks on shared links started this instant
  Timeline tl_;
};

}  // namespace

Timeline simulate(const TaskGraph& graph) { return Engine(graph).run(); }

Timeline simulate(const TaskGraph& graph, Exchange& exchange, const std::function<int(int rank)>& process_of_rank) {
  return Engine(graph, &exchange, process_of_rank).run();
}

}  // namespace twinsim::engine
