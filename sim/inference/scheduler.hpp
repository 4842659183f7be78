#pragma once
// Continuous batching as vLLM schedules it (Yu et al. 2022, Orca §4.2: iteration-level
// scheduling; Kwon et al. 2023, vLLM §4.2-4.5: paged blocks, preemption by recompute;
// vLLM v1 Scheduler.schedule for the token budget and chunked prefill):
//  1. running sequences, oldest first, each get the tokens they still need (a decode
//     step: 1; a prompt: the rest of it, chunked to the token budget). A sequence that
//     needs a new block when none is free preempts the newest running sequence, which
//     frees all its blocks and goes back to the front of the queue to be recomputed;
//  2. then, if nothing was preempted, waiting requests are admitted in arrival order
//     while the token budget, max_sequences and free blocks allow.
// Several schedulers may share one BlockPool (pipeline-parallel virtual engines).
//
// Swap preemption (vLLM v0's --preemption-mode swap with --swap-space): with a host pool,
// the preempted sequence's blocks are copied to host memory instead of dropped, and copied
// back when it is scheduled again; it keeps what it computed. Without room on the host it
// is recomputed as before. The pass that moves blocks carries their counts (PassShape).
//
// Speculative decoding (models/speculative.hpp, vLLM's spec decode): a sequence's decode
// step verifies K proposed tokens with its own, K + 1 positions in one chunk, holding the
// blocks for all of them (vLLM's lookahead slots); when the pass ends, each proposal is
// accepted in turn with chance alpha until the first rejection (a seeded draw, the same
// on every machine), and the accepted run plus the served model's own token are kept.
#include <cstdint>
#include <deque>
#include <random>
#include <vector>

#include "sim/inference/iteration_ops.hpp"
#include "sim/inference/requests.hpp"

namespace twinsim {

class BlockPool {
 public:
  explicit BlockPool(std::int64_t blocks) : total_(blocks), free_(blocks) {}
  std::int64_t total() const { return total_; }
  std::int64_t free() const { return free_; }
  std::int64_t used() const { return total_ - free_; }
  bool take(std::int64_t n) {
    if (n > free_) return false;
    free_ -= n;
    return true;
  }
  void give(std::int64_t n) { free_ += n; }

 private:
  std::int64_t total_, free_;
};

struct SchedulerLimits {
  std::int64_t block_tokens = 16;
  std::int64_t max_batched_tokens = 2048;  // tokens one pass computes at most
  std::int64_t max_sequences = 256;        // sequences one pass holds at most
  std::int64_t attention_window = 0;       // the model's sliding window: the shapes count its pairs too
  // Share of a token's KV bytes in windowed layers, which keep only the last
  // attention_window tokens (vLLM's hybrid KV cache manager frees their older blocks): a
  // sequence of L tokens holds blocks for (1 - share) L + share min(L, window) tokens.
  double windowed_kv_share = 0;

  std::int64_t swap_blocks = 0;     // host blocks for swap preemption, per replica; 0: recompute
  int speculative_tokens = 0;       // K proposed per decode step; 0: no speculative decoding
  double acceptance_rate = 0;       // alpha
  std::uint64_t acceptance_seed = 1;
  // Keep every inter-token gap (ITL as vLLM's and SGLang's benchmarks count it: the time
  // between successive outputs of a request, a verified run as one output); one double a token.
  bool record_itl = false;
  // Share of each request's output tokens whose blocks admission keeps free for it: a waiting
  // request is admitted only while the free blocks cover its prompt and that share of its
  // output, beyond what the running ones are still owed. 0: vLLM's (admit on the prompt,
  // preempt when blocks run out); 1: TensorRT-LLM's GUARANTEED_NO_EVICT (never preempts).
  double output_reserve = 0;
  // SGLang's policy (its scheduler's get_next_batch_to_run without --enable-mixed-chunk):
  // a pass holds prompt chunks only (the running ones' unfinished prompts, then admitted
  // requests) whenever there are any, and the running sequences' decode step otherwise,
  // so a prefill stalls every decode. false: vLLM's, both in one pass.
  bool prefill_first = false;
  // TensorRT-LLM's micro-batch scheduler without chunking (batch_manager/microBatchScheduler.cpp,
  // MicroBatchScheduler::operator(), `!mCtxChunkConfig`): a waiting request's whole prompt joins the
  // pass when it fits what the running ones' tokens leave of max_batched_tokens; the first that
  // does not fit stops admission (first come, first served), so it waits for a later pass.
  // false: prompts are chunked to the budget.
  bool whole_prompts = false;
  // An overlap scheduler (SGLang's event_loop_overlap, TensorRT-LLM's overlap executor: the
  // stack's serving_async) launches pass k+1 before pass k's results are back, so pass k+1 is
  // formed when pass k starts: a request that arrives while the engine runs joins the pass
  // after the next one. false: it joins the next pass (vLLM V1's EngineCore step loop).
  bool overlap_pickup = false;
  // When no rank has a request, the next fetch takes only the first that has arrived; the others
  // wait for the fetch after that pass (StackSpec::serving_idle_fetch_one; run_lockstep_serving).
  bool idle_fetch_one = false;
  // The frontend's time per request (the stack's serving_request_us): a request sent at t
  // reaches the scheduler at t + request_path_s; its TTFT and E2EL count from t.
  double request_path_s = 0;
  // and per prompt token (the stack's serving_request_token_us: tokenising the prompt's text)
  double request_token_s = 0;
  // The CUDA-graph batch sizes the engine captured (captured_graph_batches): a generation-only
  // pass is priced padded to the next one (sim/inference/cuda_graph_padding.hpp); empty: unpadded.
  std::vector<std::int64_t> graph_batches;

  // Blocks (of all layers' KV for block_tokens tokens) a sequence of `tokens` tokens holds.
  std::int64_t blocks_for(std::int64_t tokens) const;
};

// The token budget trtllm-bench runs with chunking off: max_num_tokens raised to at least the
// longest prompt plus max_batch_size (tensorrt_llm/bench/benchmark/utils/general.py get_settings,
// "Chunked prefill is disabled ... Forcing max_num_tokens to max_isl + max_batch_size").
std::int64_t whole_prompt_token_budget(std::int64_t max_batched_tokens, std::int64_t longest_prompt,
                                       std::int64_t max_sequences);

// One pass's work. Without speculative decoding only `target` is filled. With a draft
// model, it runs `draft_first` (the prefill chunks and one token per decoding sequence:
// what the served model would run without speculation) and then `draft_next`
// (one token per decoding sequence, at the same contexts) K - 1 more times.
struct PassShape {
  IterationShape target;
  IterationShape draft_first, draft_next;
  std::int64_t swap_out_blocks = 0, swap_in_blocks = 0;  // KV blocks copied to / from the host before the pass
};

// Proposals accepted in one step: each of `proposed` in turn with chance `alpha`, up to the
// first rejection; u from the top 53 bits of mt19937_64, as poisson_requests.
std::int64_t accepted_proposals(std::int64_t proposed, double alpha, std::mt19937_64& rng);

// What happened to one request; times in seconds from the start of the simulation.
struct RequestTimes {
  double first_token_s = -1;
  double last_token_s = -1;  // when its latest output token (or verified run) came out
  double finish_s = -1;
  int preemptions = 0;
};

class Scheduler {
 public:
  // `host`: the replica's host pool for swap preemption (nullptr: recompute only).
  Scheduler(const std::vector<Request>& requests, BlockPool& pool, const SchedulerLimits& limits,
            std::vector<RequestTimes>& times, BlockPool* host = nullptr);

  void enqueue(int request);
  // Plans the next pass; false when there is nothing this scheduler can run now.
  bool schedule(PassShape& shape);
  // The planned pass ended at `time_s`: sequences advance, sample, finish.
  void complete(double time_s);

  std::int64_t unfinished() const { return static_cast<std::int64_t>(running_.size() + waiting_.size()); }
  std::int64_t running() const { return static_cast<std::int64_t>(running_.size()); }
  std::int64_t waiting() const { return static_cast<std::int64_t>(waiting_.size()); }
  // Speculative decoding so far: verify steps run, and the output tokens they gave.
  std::int64_t verify_steps() const { return verify_steps_; }
  std::int64_t verified_tokens() const { return verified_tokens_; }
  // The inter-token gaps so far (SchedulerLimits::record_itl), in the order they came out.
  const std::vector<double>& itl_s() const { return itl_s_; }

 private:
  struct Sequence {
    int request = 0;
    std::int64_t computed = 0;   // tokens whose K,V are in the cache
    std::int64_t generated = 0;  // output tokens sampled so far
    std::int64_t blocks = 0;     // blocks held
    std::int64_t planned = 0;    // tokens the planned pass computes
    std::int64_t shared = 0;     // of `computed`: prefix tokens in shared, cached blocks
    bool verifying = false;      // the planned pass is a speculative decode step
    std::int64_t swapped = 0;    // blocks it holds on the host (swap preemption), to copy back
  };
  // Tokens the next pass computes for `s`: the rest of its prompt (chunked by the caller),
  // one decode token, or that token and the proposals to verify.
  std::int64_t wanted_tokens(const Sequence& s) const;
  std::int64_t known_tokens(const Sequence& s) const;
  bool grow(Sequence& s, std::int64_t tokens);  // takes the blocks for `tokens` more
  // Blocks `s` still needs to reach its prompt plus output_reserve of its output.
  std::int64_t reserved_blocks(const Sequence& s) const;
  void preempt_newest();
  // Plans the running sequences' tokens within `budget` (prompts_only: those still in their
  // prompt); false when a sequence had to be preempted.
  bool plan_running(std::int64_t& budget, bool prompts_only);
  void admit_waiting(std::int64_t& budget);
  bool in_prompt(const Sequence& s) const { return s.generated == 0 || known_tokens(s) - s.computed > 1; }
  std::int64_t swap_out_ = 0, swap_in_ = 0;  // blocks moved while planning this pass
  std::int64_t verify_steps_ = 0, verified_tokens_ = 0;
  std::vector<double> itl_s_;

  const std::vector<Request>& requests_;
  BlockPool& pool_;
  BlockPool* host_;
  SchedulerLimits limits_;
  std::vector<RequestTimes>& times_;
  std::vector<Sequence> running_;  // admission order
  std::deque<Sequence> waiting_;   // arrival order; preempted ones at the front
  std::mt19937_64 acceptance_;     // speculative decoding's draws
};

}  // namespace twinsim
