#pragma once
// The engine's clock: a binary min-heap of task-finish events ordered by (time, sequence
// number). The sequence number is the order events were pushed, so events at the same
// instant pop first-in first-out and identical inputs give identical timelines bit for bit.
#include <cstdint>
#include <queue>
#include <vector>

#include "sim/engine/task_graph.hpp"

namespace twinsim::engine {

struct Event {
  double time;
  std::uint64_t seq;
  TaskId task;
};

class EventQueue {
 public:
  void reserve(std::size_t n) {
    std::vector<Event> storage;
    storage.reserve(n);
    heap_ = Heap(Later{}, std::move(storage));
  }
  void push(double time, TaskId task) { heap_.push({time, next_seq_++, task}); }
  Event pop() {
    Event e = heap_.top();
    heap_.pop();
    return e;
  }
  bool empty() const { return heap_.empty(); }
  double next_time() const { return heap_.top().time; }  // of the event pop() returns
  const Event& top() const { return heap_.top(); }
  std::uint64_t pushed() const { return next_seq_; }

 private:
  // std::priority_queue is a max-heap: "less" means "pops later".
  struct Later {
    bool operator()(const Event& a, const Event& b) const {
      return a.time != b.time ? a.time > b.time : a.seq > b.seq;
    }
  };
  using Heap = std::priority_queue<Event, std::vector<Event>, Later>;
  Heap heap_;
  std::uint64_t next_seq_ = 0;
};

}  // namespace twinsim::engine
