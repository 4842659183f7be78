#include "sim/inference/scheduler.hpp"

#include <algorithm>
#include <cmath>

#include "sim/inference/kv_cache.hpp"

namespace twinsim {

Scheduler::Scheduler(const std::vector<Request>& requests, BlockPool& pool, const SchedulerLimits& limits,
                     std::vector<RequestTimes>& times, BlockPool* host)
    : requests_(requests), pool_(pool), host_(host), limits_(limits), times_(times),
      acceptance_(limits.acceptance_seed) {}

std::int64_t accepted_proposals(std::int64_t proposed, double alpha, std::mt19937_64& rng) {
  std::int64_t accepted = 0;
  while (accepted < proposed && static_cast<double>(rng() >> 11) * 0x1.0p-53 < alpha) ++accepted;
  return accepted;
}

// A prefix-cache hit starts with the cached prefix in place, in blocks shared with the
// cache (held by it, not by the sequence).
std::int64_t SchedulerLimits::blocks_for(std::int64_t tokens) const {
  return windowed_blocks_for_tokens(tokens, block_tokens, attention_window, windowed_kv_share);
}

// trtllm-bench's lift: max(max_num_tokens, max_isl + max_batch_size)
std::int64_t whole_prompt_token_budget(std::int64_t max_batched_tokens, std::int64_t longest_prompt,
                                       std::int64_t max_sequences) {
  return std::max(max_batched_tokens, longest_prompt + max_sequences);
}

void Scheduler::enqueue(int request) {
  const Request& r = requests_[request];
  if (r.kv_arrives) {  // the prompt is cached and token 1 sampled: its blocks are taken on admission
    waiting_.push_back({request, r.prompt_len, 1, 0, 0, 0});
    return;
  }
  waiting_.push_back({request, r.cached_prefix, 0, 0, 0, r.cached_prefix});
}

// The prompt plus every token sampled so far; the newest sampled one is not yet cached.
std::int64_t Scheduler::known_tokens(const Sequence& s) const {
  return requests_[s.request].prompt_len + s.generated;
}

std::int64_t Scheduler::wanted_tokens(const Sequence& s) const {
  const std::int64_t rest = known_tokens(s) - s.computed;
  if (rest != 1 || limits_.speculative_tokens == 0 || s.generated == 0) return rest;  // the prompt: no proposals
  // a decode step: propose no more tokens than the request still wants after this one
  const std::int64_t left = requests_[s.request].output_len - s.generated - 1;
  return 1 + std::min<std::int64_t>(limits_.speculative_tokens, left);
}

bool Scheduler::grow(Sequence& s, std::int64_t tokens) {
  // the blocks of the whole sequence (windowed layers keep their window only), less the
  // shared prefix's whole blocks the cache holds
  const std::int64_t own = limits_.blocks_for(s.computed + tokens) - s.shared / limits_.block_tokens;
  const std::int64_t needed = own - s.blocks;
  if (needed > 0 && !pool_.take(needed)) return false;
  if (needed > 0) s.blocks += needed;
  if (s.swapped > 0) {  // its blocks come back from the host before the pass
    swap_in_ += s.swapped;
    host_->give(s.swapped);
    s.swapped = 0;
  }
  s.planned = tokens;
  return true;
}

std::int64_t Scheduler::reserved_blocks(const Sequence& s) const {
  const Request& r = requests_[s.request];
  const auto owed = static_cast<std::int64_t>(std::ceil(limits_.output_reserve * static_cast<double>(r.output_len)));
  const std::int64_t own = limits_.blocks_for(r.prompt_len + owed) - s.shared / limits_.block_tokens;
  return std::max<std::int64_t>(0, own - s.blocks);
}

// vLLM's recompute preemption: drop the cache, keep the tokens generated so far.
void Scheduler::preempt_newest() {
  Sequence victim = running_.back();
  running_.pop_back();
  pool_.give(victim.blocks);
  if (host_ && victim.blocks > 0 && host_->take(victim.blocks)) {  // swap: its K,V waits on the host
    swap_out_ += victim.blocks;
    victim.swapped = victim.blocks;
  } else {
    victim.computed = victim.shared;  // recompute: the shared prefix stays in the cache
  }
  victim.blocks = 0;
  victim.planned = 0;
  ++times_[victim.request].preemptions;
  waiting_.push_front(victim);
}

bool Scheduler::plan_running(std::int64_t& budget, bool prompts_only) {
  bool preempted = false;
  for (std::size_t i = 0; i < running_.size() && budget > 0;) {
    Sequence& s = running_[i];
    if (prompts_only && !in_prompt(s)) {
      ++i;
      continue;
    }
    if (limits_.whole_prompts && in_prompt(s) && wanted_tokens(s) > budget) break;  // waits whole, in order
    const std::int64_t n = std::min(wanted_tokens(s), budget);
    bool fits = grow(s, n);
    while (!fits && running_.size() > i + 1) {  // free the newest sequence's blocks
      preempt_newest();
      preempted = true;
      fits = grow(running_[i], n);
    }
    if (!fits) {  // it is the newest itself
      preempt_newest();
      return false;
    }
    budget -= n;
    ++i;
  }
  return !preempted;
}

void Scheduler::admit_waiting(std::int64_t& budget) {
  std::int64_t owed = 0;  // blocks the running sequences are still owed (output_reserve)
  if (limits_.output_reserve > 0)
    for (const Sequence& s : running_) owed += reserved_blocks(s);
  while (budget > 0 && !waiting_.empty() && static_cast<std::int64_t>(running_.size()) < limits_.max_sequences) {
    Sequence s = waiting_.front();
    if (limits_.whole_prompts && wanted_tokens(s) > budget) break;  // the prompt waits whole for a later pass
    const std::int64_t n = std::min(wanted_tokens(s), budget);
    const std::int64_t reserve = limits_.output_reserve > 0 ? reserved_blocks(s) : 0;
    if (!running_.empty() && reserve > 0 && pool_.free() - owed < reserve) break;  // alone, it runs anyway
    if (!grow(s, n)) break;  // first come, first served: no skipping ahead
    owed += reserved_blocks(s);
    waiting_.pop_front();
    running_.push_back(s);
    budget -= n;
  }
}

bool Scheduler::schedule(PassShape& pass) {
  pass = PassShape{};
  swap_out_ = swap_in_ = 0;
  IterationShape& shape = pass.target;
  shape.window = pass.draft_first.window = pass.draft_next.window = limits_.attention_window;
  std::int64_t budget = limits_.max_batched_tokens;
  const bool prompts_first = limits_.prefill_first;
  if (plan_running(budget, prompts_first)) admit_waiting(budget);
  const bool planned = std::any_of(running_.begin(), running_.end(), [](const Sequence& s) { return s.planned > 0; });
  if (prompts_first && !planned) plan_running(budget, false);  // no prompt to run: the decode step
  for (Sequence& s : running_) {
    if (s.planned == 0) continue;
    // a decode step (one known token left) planned longer verifies proposals: every position samples
    s.verifying = s.planned > 1 && s.computed + 1 == known_tokens(s);
    const std::int64_t own = s.verifying ? 1 : s.planned;  // what runs without speculation
    const bool samples = s.computed + own == known_tokens(s);
    shape.add_chunk(s.computed, s.planned, samples);
    if (s.verifying) shape.sampled += s.planned - 1;
    pass.draft_first.add_chunk(s.computed, own, samples);
    if (s.verifying) pass.draft_next.add_chunk(s.computed + 1, 1, true);
  }
  pass.swap_out_blocks = swap_out_;
  pass.swap_in_blocks = swap_in_;
  return shape.tokens > 0;
}

void Scheduler::complete(double time_s) {
  std::size_t kept = 0;
  for (std::size_t i = 0; i < running_.size(); ++i) {
    Sequence s = running_[i];
    if (s.planned > 0) {
      // a verify step keeps its token's K,V and the accepted proposals'; each is an output token
      const std::int64_t advanced =
          s.verifying ? 1 + accepted_proposals(s.planned - 1, limits_.acceptance_rate, acceptance_) : s.planned;
      s.computed += advanced;
      if (s.verifying) {
        s.generated += advanced - 1;  // the accepted proposals; the sample below adds one
        ++verify_steps_;
        verified_tokens_ += advanced;
      }
      s.planned = 0;
      s.verifying = false;
      if (s.computed == known_tokens(s)) {  // the pass ended at the last known token: sample
        ++s.generated;
        RequestTimes& t = times_[s.request];
        if (t.first_token_s < 0) t.first_token_s = time_s;
        else if (limits_.record_itl) itl_s_.push_back(time_s - t.last_token_s);
        t.last_token_s = time_s;
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
