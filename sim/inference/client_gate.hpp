#pragma once
// The benchmark client's cap on requests in flight (`vllm bench serve --max-concurrency`,
// SGLang bench_serving's alike): each request waits for its scheduled send time and then
// for a free slot (an asyncio semaphore of that many slots in vLLM's benchmarks/serve.py),
// and its TTFT and E2EL count from when it was sent. A slot frees when a request finishes.
#include <cstdint>
#include <functional>
#include <limits>
#include <queue>
#include <vector>

namespace twinsim {

class ClientGate {
 public:
  // `max_in_flight` <= 0: no cap (every request goes at its scheduled time)
  explicit ClientGate(std::int64_t max_in_flight) : capped_(max_in_flight > 0), free_slots_(max_in_flight) {}

  // When a request scheduled at `scheduled_s` can be sent: at once while a slot is free, else
  // at the earliest known finish (infinity while none is known yet).
  double send_time_s(double scheduled_s) const {
    if (!capped_ || free_slots_ > 0) return scheduled_s;
    if (finishes_.empty()) return std::numeric_limits<double>::infinity();
    return scheduled_s > finishes_.top() ? scheduled_s : finishes_.top();
  }

  // The request goes: it takes a free slot, or the one the earliest finish freed.
  void send() {
    if (!capped_) return;
    if (free_slots_ > 0) --free_slots_;
    else finishes_.pop();
  }

  // `count` requests finished at `time_s`: each frees its slot then.
  void finished(double time_s, std::int64_t count) {
    if (!capped_) return;
    for (std::int64_t i = 0; i < count; ++i) finishes_.push(time_s);
  }

 private:
  bool capped_;
  std::int64_t free_slots_;
  std::priority_queue<double, std::vector<double>, std::greater<>> finishes_;
};

}  // namespace twinsim
