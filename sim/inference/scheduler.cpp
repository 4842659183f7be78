#include "sim/inference/scheduler.hpp"

#include <algorithm>
#include <cmath>

#include "sim/inference/kv_cache.hpp"

namespace twinsim {

Scheduler::Scheduler(const std::vector<Request>& requests, BlockPool& pool, const SchedulerLimits& limits,
                     std::vector<RequestTimes>& times)
    : requests_(requests), pool_(pool), limits_(limits), times_(times) {}

// A prefix-cache hit starts with the cached prefix in place, in blocks shared with the
// cache (held by it, not by the sequence).
std::int64_t SchedulerLimits::blocks_for(std::int64_t tokens) const {
  return windowed_blocks_for_tokens(tokens, block_tokens, attention_window, windowed_kv_share);
}

void Scheduler::enqueue(int request) {
  const std::int64_t cached = requests_[request].cached_prefix;
  waiting_.push_back({request, cached, 0, 0, 0, cached});
}

// The prompt plus every token sampled so far; the newest sampled one is not yet cached.
std::int64_t Scheduler::known_tokens(const Sequence& s) const {
  return requests_[s.request].prompt_len + s.generated;
}

bool Scheduler::grow(Sequence& s, std::int64_t tokens) {
  // the blocks of the whole sequence (windowed layers keep their window only), less the
  // shared prefix's whole blocks the cache holds
  const std::int64_t own = limits_.blocks_for(s.computed + tokens) - s.shared / limits_.block_tokens;
  const std::int64_t needed = own - s.blocks;
  if (needed > 0 && !pool_.take(needed)) return false;
  if (needed > 0) s.blocks += needed;
  s.planned = tokens;
  return true;
}

// vLLM's recompute preemption: drop the cache, keep the tokens generated so far.
void Scheduler::preempt_newest() {
  Sequence victim = running_.back();
  running_.pop_back();
  pool_.give(victim.blocks);
  victim.blocks = 0;
  victim.computed = victim.shared;  // the shared prefix stays in the cache
  victim.planned = 0;
  ++times_[victim.request].preemptions;
  waiting_.push_front(victim);
}

bool Scheduler::schedule(IterationShape& shape) {
  shape = IterationShape{};
  shape.window = limits_.attention_window;
  std::int64_t budget = limits_.max_batched_tokens;
  bool preempted = false;
  for (std::size_t i = 0; i < running_.size() && budget > 0;) {
    Sequence& s = running_[i];
    const std::int64_t n = std::min(known_tokens(s) - s.computed, budget);
    bool fits = grow(s, n);
    while (!fits && running_.size() > i + 1) {  // free the newest sequence's blocks
      preempt_newest();
      preempted = true;
      fits = grow(running_[i], n);
    }
    if (!fits) {  // it is the newest itself
      preempt_newest();
      preempted = true;
      break;
    }
    budget -= n;
    ++i;
  }
  while (!preempted && budget > 0 && !waiting_.empty() &&
         static_cast<std::int64_t>(running_.size()) < limits_.max_sequences) {
    Sequence s = waiting_.front();
    const std::int64_t n = std::min(known_tokens(s) - s.computed, budget);
    if (!grow(s, n)) break;  // first come, first served: no skipping ahead
    waiting_.pop_front();
    running_.push_back(s);
    budget -= n;
  }
  for (const Sequence& s : running_)
    if (s.planned > 0) shape.add_chunk(s.computed, s.planned, s.computed + s.planned == known_tokens(s));
  return shape.tokens > 0;
}

void Scheduler::complete(double time_s) {
  std::size_t kept = 0;
  for (std::size_t i = 0; i < running_.size(); ++i) {
    Sequence s = running_[i];
    if (s.planned > 0) {
      s.computed += s.planned;
      s.planned = 0;
      if (s.computed == known_tokens(s)) {  // the pass ended at the last known token: sample
        ++s.generated;
        RequestTimes& t = times_[s.request];
        if (t.first_token_s < 0) t.first_token_s = time_s;
        if (s.generated == requests_[s.request].output_len) {
          t.finish_s = time_s;
          pool_.give(s.blocks);
          continue;
        }
      }
    }
    running_[kept++] = s;
  }
  running_.resize(kept);
}

}  // namespace twinsim
