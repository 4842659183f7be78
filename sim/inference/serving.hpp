#pragma once
// The serving simulation: requests arrive, schedulers (scheduler.hpp) batch them pass
// by pass, and each pass is priced by the cost model and run through the pipeline.
//
// Why an event loop of its own rather than sim/engine: the engine runs a task graph
// fixed in advance, but continuous batching decides each pass from the state the
// previous pass left (who finished, which blocks are free, who arrived meanwhile), so
// the graph does not exist before the simulation. The loop here is small: a binary
// heap of "engine ready" events, the next arrival, and one busy-until time per
// pipeline stage.
//
// Pipeline parallelism as vLLM runs it: pp virtual engines, each with its own
// scheduler and requests (a new request goes to the one with the fewest unfinished
// requests, vLLM LLMEngine.add_request), so up to pp passes are in flight, one per
// stage; a pass enters stage s when the previous stage is done with it and stage s is
// free. Here the engines share one pool of KV blocks.
#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "scenario/scenario.hpp"
#include "sim/inference/iteration_cost.hpp"
#include "sim/inference/kv_cache.hpp"
#include "sim/inference/requests.hpp"
#include "sim/inference/scheduler.hpp"

namespace twinsim {

struct OccupancySample {
  double time_s = 0;  // when a pass started
  std::int64_t used_blocks = 0;
  std::int64_t running = 0;  // sequences holding blocks, all engines
  std::int64_t waiting = 0;
};

// The KV cache's occupancy over the run, kept as it goes: each pass's sample holds until
// the next pass starts (the last one until the last request finishes).
struct OccupancySummary {
  double first_pass_s = 0, last_pass_s = 0;
  std::int64_t last_used_blocks = 0;
  double used_block_seconds = 0;  // sum of used blocks x time held, up to the last pass's start
  std::int64_t peak_used_blocks = 0;
};

struct ServingResult {
  std::vector<Request> requests;
  std::vector<RequestTimes> times;  // one per request, same order
  std::vector<OccupancySample> occupancy;  // every pass's sample, when asked (keep_occupancy)
  OccupancySummary occupancy_summary;
  std::int64_t total_blocks = 0;
  std::int64_t block_tokens = 0;
  std::int64_t passes = 0;
  double busy_s = 0;  // sum of pass latencies
  std::int64_t swapped_out_blocks = 0, swapped_in_blocks = 0;  // swap preemption's copies
  std::int64_t verify_steps = 0, verified_tokens = 0;  // speculative decoding: steps, and the tokens they gave
  std::vector<double> itl_s;  // every inter-token gap, when asked (SchedulerLimits::record_itl)
};

// How a request picks its replica among several: in arrival order in turn, or the one
// with the fewest unfinished requests (ties in turn, from the replica after the last one
// chosen), the two policies of vLLM's production-stack router and SGLang's router.
enum class Router { round_robin, least_loaded };
std::string_view to_string(Router r);
bool parse_router(std::string_view name, Router& out);

// Replicas of the model behind one router, each with its own KV cache and GPUs.
struct ReplicaSet {
  int replicas = 1;
  Router router = Router::least_loaded;
};

// Prices a pass: its time on each pipeline stage and the transfer between stages.
using PassCostFn = std::function<IterationCost(const PassShape&)>;

// The loop itself, with any pricing (tests give a hand-checkable one).
// `keep_occupancy`: also keep every pass's sample (one per pass: 32 bytes each, for
// `serve --csv`); the summary is always kept.
// `set`: that many replicas, each of `kv_blocks` blocks and `pipeline_stages` stages, the
// requests routed among them; KV occupancy is over all their blocks.
// `max_concurrency` > 0: the client keeps at most that many requests in flight
// (client_gate.hpp); a request held back is sent when a slot frees, and the result's
// arrival_s is when it was sent.
ServingResult run_serving(const std::vector<Request>& requests, std::int64_t kv_blocks, const SchedulerLimits& limits,
                          int pipeline_stages, const PassCostFn& cost, bool keep_occupancy = true,
                          const ReplicaSet& set = {}, std::int64_t max_concurrency = 0);

// The replicas as the ranks of one expert-parallel group (attention DP x EP): every pass
// starts on all of them at once and ends when the group's pass does, `cost` pricing the
// ranks' shapes together (ServingCostModel::ep_lockstep_pass_s; a rank without work joins
// with an empty shape). One pipeline stage; the requests routed round robin or least loaded
// as run_serving does; `max_concurrency` as run_serving's. With limits.idle_fetch_one, a fetch
// while no rank holds a request takes the first arrived one only (its rank runs a pass alone).
using LockstepCostFn = std::function<double(const std::vector<IterationShape>&)>;
ServingResult run_lockstep_serving(const std::vector<Request>& requests, std::int64_t kv_blocks,
                                   const SchedulerLimits& limits, const LockstepCostFn& cost, bool keep_occupancy,
                                   const ReplicaSet& set, std::int64_t max_concurrency = 0);

// A pass's cost with its swap preemption's copies before it: on each stage, its GPUs'
// share of the blocks out over d2h, then in over h2d (cluster.host).
IterationCost with_swap_time(IterationCost c, const PassShape& pass, const KvCapacity& capacity,
                             const ClusterSpec& cluster);

// The simulation's work: every request's sequence steps (one per output token, one per
// prefill chunk of at most max_batched_tokens), which bounds its passes and its scheduling
// work (each running sequence is handled once per pass). Measured: about 1.5M steps per
// second (`twinsim serve scenarios/inference/llama2-7b-a100.yaml --requests 300000`: 38.7M
// steps in 24.5 s on this 2-core machine, 2026-11-25).
std::int64_t serving_sequence_steps(const std::vector<Request>& requests, const SchedulerLimits& limits);

struct ServeOptions {
  KvCacheConfig kv;
  std::int64_t max_sequences = kDefaultMaxSequences;
  // Automatic prefix caching (vLLM --enable-prefix-caching): every prompt opens with the
  // same `prefix_tokens` (a system prompt) and a share `prefix_hit_rate` of the requests
  // find it cached (with_prefix_cache); its blocks are held once, by the cache.
  std::int64_t prefix_tokens = 0;
  double prefix_hit_rate = 0;
  std::uint64_t prefix_seed = 0;
  // Seed of speculative decoding's acceptance draws (inference.speculative): serve's --seed.
  std::uint64_t acceptance_seed = 1;
  bool keep_occupancy = true;  // every pass's KV sample (run_serving); the summary is always kept
  bool keep_itl = false;        // every inter-token gap (ServingResult::itl_s, for ITL percentiles)
  ReplicaSet replicas;          // default: one replica (the figures are per replica)
  // The benchmark client's cap on requests in flight (vLLM/SGLang --max-concurrency); 0: none.
  std::int64_t max_concurrency = 0;
  // Swap preemption (vLLM v0 --swap-space, --preemption-mode swap): host memory per GPU for
  // preempted sequences' K,V, copied over PCIe (cluster.host) instead of recomputed; 0: recompute.
  double swap_space_bytes = 0;
  // Refuse, before simulating, requests that need more sequence steps than this
  // (serving_sequence_steps; 2e8 is about two minutes here); 0: no limit.
  std::int64_t max_sequence_steps = 200'000'000;
  // CUDA-graph batch sizes asked of the engine (TensorRT-LLM's cuda_graph_config.batch_sizes with
  // enable_padding, serve's --cuda-graph-batch-sizes): generation-only passes are priced padded to
  // the captured sizes (sim/inference/cuda_graph_padding.hpp); empty: none.
  std::vector<std::int64_t> cuda_graph_batch_sizes;
};

// One replica of the scenario's model (plan.dp replicas serve independent streams).
// Throws std::invalid_argument when no KV block fits or a request can never fit, and
// ScenarioError (naming --max-sequence-steps) when the requests need more than
// options.max_sequence_steps, before simulating.
ServingResult simulate_serving(const Scenario& scenario, const std::vector<Request>& requests,
                               const ServeOptions& options = {});

}  // namespace twinsim
