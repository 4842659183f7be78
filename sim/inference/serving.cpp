#include "sim/inference/serving.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <queue>
#include <stdexcept>
#include <string>

#include "models/checked_math.hpp"
#include "scenario/errors.hpp"
#include "sim/inference/client_gate.hpp"
#include "sim/inference/cuda_graph_padding.hpp"
#include "sim/inference/speculative.hpp"

namespace twinsim {

namespace {

struct ReadyEvent {
  double time_s;
  int engine;
  bool operator>(const ReadyEvent& o) const {
    return time_s != o.time_s ? time_s > o.time_s : engine > o.engine;  // ties: lower engine first
  }
};

void check_requests_fit(const std::vector<Request>& requests, std::int64_t kv_blocks, const SchedulerLimits& limits) {
  const std::int64_t block_tokens = limits.block_tokens;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const Request& r = requests[i];
    if (r.prompt_len < 1 || r.output_len < 1)
      throw std::invalid_argument("request " + std::to_string(i) + ": prompt_len and output_len must be >= 1");
    if (!std::isfinite(r.arrival_s) || r.arrival_s < 0)
      throw std::invalid_argument("request " + std::to_string(i) + ": arrival_s=" + std::to_string(r.arrival_s) +
                                  " must be a finite time >= 0");
    if (r.cached_prefix < 0 || r.cached_prefix >= r.prompt_len || r.cached_prefix % block_tokens != 0)
      throw std::invalid_argument("request " + std::to_string(i) + ": cached_prefix=" + std::to_string(r.cached_prefix) +
                                  " must be whole blocks below prompt_len=" + std::to_string(r.prompt_len));
    // the last sampled token is never cached: prompt + output - 1 tokens at most
    const std::int64_t blocks = limits.blocks_for(r.prompt_len + r.output_len - 1);
    if (blocks > kv_blocks)
      throw std::invalid_argument("request " + std::to_string(i) + " (prompt_len=" + std::to_string(r.prompt_len) +
                                  ", output_len=" + std::to_string(r.output_len) + ") needs " + std::to_string(blocks) +
                                  " KV blocks; the cache holds " + std::to_string(kv_blocks));
  }
}

// Host blocks of swap space: each GPU's swap_space_bytes over its largest block (the stage
// with the most KV bytes a token), vLLM's CacheEngine sizing; within the GPU's share of
// the host's memory.
std::int64_t swap_blocks(const Scenario& s, const KvCapacity& capacity, const ServeOptions& o) {
  const HostSpec& host = s.cluster.host;
  const std::string value = std::to_string(o.swap_space_bytes / (1024.0 * 1024 * 1024));
  if (!host.described())
    throw ScenarioError("--swap-space", value, "needs the cluster's host side (cluster.host: PCIe and CPU memory)");
  if (o.swap_space_bytes > static_cast<double>(host.memory_bytes))
    throw ScenarioError("--swap-space", value,
                        "GiB exceeds this GPU's share of the host's memory, " +
                            std::to_string(host.memory_bytes / (1024.0 * 1024 * 1024)) + " GiB");
  std::int64_t block_bytes = 0;
  for (const StageKvCapacity& st : capacity.stages)
    block_bytes = std::max(block_bytes, st.bytes_per_token * capacity.block_tokens);
  return block_bytes > 0 ? static_cast<std::int64_t>(o.swap_space_bytes / static_cast<double>(block_bytes)) : 0;
}


}  // namespace

// The pass waits for its swaps (vLLM's worker copies the blocks before it runs the model):
// each stage's GPUs move their layers' share of the blocks over PCIe, out then in.
IterationCost with_swap_time(IterationCost c, const PassShape& pass, const KvCapacity& capacity,
                         const ClusterSpec& cluster) {
  if (pass.swap_out_blocks == 0 && pass.swap_in_blocks == 0) return c;
  for (std::size_t st = 0; st < c.stage_s.size() && st < capacity.stages.size(); ++st) {
    const double block = static_cast<double>(capacity.stages[st].bytes_per_token * capacity.block_tokens);
    c.stage_s[st] += pass.swap_out_blocks * block / cluster.host.d2h_Bps + pass.swap_in_blocks * block / cluster.host.h2d_Bps;
  }
  return c;
}

std::int64_t serving_sequence_steps(const std::vector<Request>& requests, const SchedulerLimits& limits) {
  const std::int64_t chunk = std::max<std::int64_t>(1, limits.max_batched_tokens);
  std::int64_t steps = 0;
  for (const Request& r : requests) {
    const std::int64_t prefill = r.kv_arrives ? 0 : std::max<std::int64_t>(0, r.prompt_len - r.cached_prefix);
    steps = checked_add(steps, checked_add(r.output_len, (prefill + chunk - 1) / chunk));
  }
  return steps;
}

std::string_view to_string(Router r) { return r == Router::round_robin ? "round_robin" : "least_loaded"; }

bool parse_router(std::string_view name, Router& out) {
  if (name == "round_robin") out = Router::round_robin;
  else if (name == "least_loaded") out = Router::least_loaded;
  else return false;
  return true;
}

namespace {

// The replica a request goes to: round robin in turn; least loaded the one with the fewest
// unfinished requests, ties in turn from the last replica chosen (so equal replicas share the
// stream as round robin does).
template <class Unfinished>
int route(int replicas, Router router, int last, const Unfinished& unfinished) {
  int pick = (last + 1) % replicas;
  if (router == Router::least_loaded)
    for (int k = 1; k < replicas; ++k) {
      const int r = (last + 1 + k) % replicas;
      if (unfinished(r) < unfinished(pick)) pick = r;
    }
  return pick;
}

// One pass's sample of the KV cache and the queues, and the occupancy summary it updates.
void record_pass(ServingResult& result, double time_s, const std::vector<BlockPool>& pools,
                 const std::vector<Scheduler>& schedulers, bool keep_occupancy) {
  std::int64_t used = 0, waiting = 0, running = 0;
  for (const BlockPool& p : pools) used += p.used();
  for (const Scheduler& sch : schedulers) waiting += sch.waiting(), running += sch.running();
  if (keep_occupancy) result.occupancy.push_back({time_s, used, running, waiting});
  OccupancySummary& o = result.occupancy_summary;
  if (result.passes == 0) o.first_pass_s = time_s;
  else o.used_block_seconds += static_cast<double>(o.last_used_blocks) * std::max(0.0, time_s - o.last_pass_s);
  o.last_pass_s = time_s;
  o.last_used_blocks = used;
  o.peak_used_blocks = std::max(o.peak_used_blocks, used);
}

// A run's result before its first pass: the requests (checked to fit one replica's cache),
// their times, and the cache of `replicas` replicas.
ServingResult start_result(const std::vector<Request>& requests, std::int64_t kv_blocks, const SchedulerLimits& limits,
                           int replicas) {
  check_requests_fit(requests, kv_blocks, limits);
  ServingResult result;
  result.requests = requests;
  result.times.assign(requests.size(), RequestTimes{});
  result.total_blocks = kv_blocks * replicas;
  result.block_tokens = limits.block_tokens;
  return result;
}

// A pass crosses its replica's stages in turn (stage_free: when each of them is next free, a
// stage's p2p before it); returns when its last stage finishes.
double cross_stages(const IterationCost& c, double start_s, double* stage_free, int stages) {
  double t = start_s;
  for (int st = 0; st < stages; ++st) {
    const double stage_s = st < static_cast<int>(c.stage_s.size()) ? c.stage_s[st] : 0.0;
    if (st > 0) t += c.p2p_s;
    t = std::max(t, stage_free[st]) + stage_s;
    stage_free[st] = t;
  }
  return t;
}

// The schedulers' speculative-decoding counts and inter-token gaps, into the result.
void add_scheduler_totals(ServingResult& result, const std::vector<Scheduler>& schedulers) {
  for (const Scheduler& sched : schedulers) {
    result.verify_steps += sched.verify_steps();
    result.verified_tokens += sched.verified_tokens();
    result.itl_s.insert(result.itl_s.end(), sched.itl_s().begin(), sched.itl_s().end());
  }
}

// Forms the pass an engine starts now (false: none). Under overlap pickup the requests held
// back while its previous pass ran join the queue only once this pass is formed (they ride
// in the next one), unless the engine has nothing else to run: with no pass in flight the
// overlap loop sees them at once.
bool form_pass(Scheduler& sched, std::vector<int>& held, PassShape& shape) {
  const bool formed = sched.schedule(shape);
  const bool any_held = !held.empty();
  for (int request : held) sched.enqueue(request);
  held.clear();
  return formed || (any_held && sched.schedule(shape));
}

// No rank holds an unfinished request: the group's next fetch is an idle executor's.
bool group_idle(const std::vector<Scheduler>& schedulers) {
  for (const Scheduler& sched : schedulers)
    if (sched.unfinished() > 0) return false;
  return true;
}

// The frontend's request path (HTTP, tokenisation, the hand-over to the scheduler): the
// stack's serving_request_us plus serving_request_token_us for each prompt token.
double request_path_s(const Request& request, const SchedulerLimits& limits) {
  return limits.request_path_s + limits.request_token_s * static_cast<double>(request.prompt_len);
}

// When the scheduler sees a request: that path after the client sends it.
double reaches_scheduler_s(const ClientGate& client, const Request& request, const SchedulerLimits& limits) {
  return client.send_time_s(request.arrival_s) + request_path_s(request, limits);
}

}  // namespace

ServingResult run_serving(const std::vector<Request>& requests, std::int64_t kv_blocks, const SchedulerLimits& limits,
                          int pipeline_stages, const PassCostFn& cost, bool keep_occupancy, const ReplicaSet& set,
                          std::int64_t max_concurrency) {
  ClientGate client(max_concurrency);
  const int replicas = std::max(1, set.replicas);
  ServingResult result = start_result(requests, kv_blocks, limits, replicas);
  // each replica: its own cache and `stages` virtual engines (engine e runs on replica e / stages)
  std::vector<BlockPool> pools(replicas, BlockPool(kv_blocks));
  std::vector<BlockPool> host_pools(replicas, BlockPool(limits.swap_blocks));  // swap preemption
  const int stages = std::max(1, pipeline_stages);
  const int engines = replicas * stages;
  std::vector<Scheduler> schedulers;
  schedulers.reserve(engines);
  for (int e = 0; e < engines; ++e)
    schedulers.emplace_back(result.requests, pools[e / stages], limits, result.times,
                            limits.swap_blocks > 0 ? &host_pools[e / stages] : nullptr);
  std::vector<bool> idle(engines, true);
  std::vector<std::vector<int>> held(engines);  // arrived while the engine's next pass was formed
  std::vector<bool> blocked(engines, false);  // has requests, but the blocks are held by other engines
  std::vector<double> stage_free(engines, 0.0);  // [replica * stages + stage]
  std::priority_queue<ReadyEvent, std::vector<ReadyEvent>, std::greater<>> ready;
  std::size_t next_arrival = 0;
  int last_replica = replicas - 1;  // the first request goes to replica 0
  auto unfinished = [&](int replica) {
    std::int64_t n = 0;
    for (int e = replica * stages; e < (replica + 1) * stages; ++e)
      n += schedulers[e].unfinished() + static_cast<std::int64_t>(held[e].size());
    return n;
  };
  while (next_arrival < requests.size() || !ready.empty()) {
    const double arrival = next_arrival < requests.size() ? reaches_scheduler_s(client, requests[next_arrival], limits)
                                                          : std::numeric_limits<double>::infinity();
    if (ready.empty() && std::isinf(arrival)) throw std::logic_error("serving: the client waits with nothing in flight");
    if (ready.empty() || arrival <= ready.top().time_s) {  // an arrival comes first
      const int replica = route(replicas, set.router, last_replica, unfinished);
      last_replica = replica;
      int target = replica * stages;  // its virtual engine with the fewest unfinished (vLLM add_request)
      for (int e = target + 1; e < (replica + 1) * stages; ++e)
        if (schedulers[e].unfinished() < schedulers[target].unfinished()) target = e;
      client.send();
      result.requests[next_arrival].arrival_s =
          arrival - request_path_s(requests[next_arrival], limits);  // from the send
      const int request = static_cast<int>(next_arrival++);
      if (limits.overlap_pickup && !idle[target]) held[target].push_back(request);
      else schedulers[target].enqueue(request);
      if (idle[target]) {
        idle[target] = false;
        ready.push({arrival, target});
      }
      continue;
    }
    const ReadyEvent ev = ready.top();
    ready.pop();
    Scheduler& sched = schedulers[ev.engine];
    PassShape shape;
    if (!form_pass(sched, held[ev.engine], shape)) {
      if (sched.unfinished() == 0) {
        idle[ev.engine] = true;
      } else if (!ready.empty()) {  // another engine holds the blocks: wait for one of its passes to end
        blocked[ev.engine] = true;
      } else {
        throw std::logic_error("serving: engine " + std::to_string(ev.engine) + " has " +
                               std::to_string(sched.unfinished()) + " requests but cannot schedule any");
      }
      continue;
    }
    record_pass(result, ev.time_s, pools, schedulers, keep_occupancy);
    PassShape priced = shape;  // as the engine runs it: a generation-only pass padded to its CUDA graph
    pad_to_graph_batch(priced.target, limits.graph_batches);
    const IterationCost c = cost(priced);
    result.swapped_out_blocks += shape.swap_out_blocks;
    result.swapped_in_blocks += shape.swap_in_blocks;
    const double t = cross_stages(c, ev.time_s, &stage_free[ev.engine / stages * stages], stages);
    result.busy_s += c.latency_s();
    ++result.passes;
    const std::int64_t unfinished_before = sched.unfinished();
    sched.complete(t);
    client.finished(t, unfinished_before - sched.unfinished());
    ready.push({t, ev.engine});
    for (int e = 0; e < engines; ++e)
      if (blocked[e]) blocked[e] = false, ready.push({t, e});
  }
  add_scheduler_totals(result, schedulers);
  return result;
}

ServingResult run_lockstep_serving(const std::vector<Request>& requests, std::int64_t kv_blocks,
                                   const SchedulerLimits& limits, const LockstepCostFn& cost, bool keep_occupancy,
                                   const ReplicaSet& set, std::int64_t max_concurrency) {
  const int ranks = std::max(1, set.replicas);
  ServingResult result = start_result(requests, kv_blocks, limits, ranks);
  std::vector<BlockPool> pools(ranks, BlockPool(kv_blocks));
  std::vector<Scheduler> schedulers;
  schedulers.reserve(ranks);
  for (int r = 0; r < ranks; ++r) schedulers.emplace_back(result.requests, pools[r], limits, result.times);
  ClientGate client(max_concurrency);
  std::size_t next = 0;
  int last = ranks - 1;  // the first request goes to rank 0
  double now = 0;
  std::vector<PassShape> passes(ranks);
  std::vector<IterationShape> shapes(ranks);
  std::vector<char> runs(ranks, 0);
  for (;;) {
    // an idle group's fetch may take one request only (SchedulerLimits::idle_fetch_one)
    const bool take_one = limits.idle_fetch_one && group_idle(schedulers);
    for (double due = 0;
         next < requests.size() && (due = reaches_scheduler_s(client, requests[next], limits)) <= now;) {
      last = route(ranks, set.router, last, [&](int r) { return schedulers[r].unfinished(); });
      client.send();
      result.requests[next].arrival_s = due - request_path_s(requests[next], limits);  // TTFT from the send
      schedulers[last].enqueue(static_cast<int>(next++));
      if (take_one) break;
    }
    bool any = false;
    for (int r = 0; r < ranks; ++r) {
      passes[r] = PassShape{};
      runs[r] = schedulers[r].schedule(passes[r]) ? 1 : 0;
      shapes[r] = runs[r] ? passes[r].target : IterationShape{};
      any = any || runs[r];
    }
    if (!any) {  // nothing runs: the group waits for the next request
      if (next >= requests.size()) break;
      const double due = reaches_scheduler_s(client, requests[next], limits);
      if (std::isinf(due)) throw std::logic_error("serving: the client waits with nothing in flight");
      now = std::max(now, due);
      continue;
    }
    record_pass(result, now, pools, schedulers, keep_occupancy);
    pad_lockstep_to_graph_batch(shapes, limits.graph_batches);
    const double step_s = cost(shapes);
    now += step_s;
    result.busy_s += step_s;
    ++result.passes;
    for (int r = 0; r < ranks; ++r) {
      if (!runs[r]) continue;
      const std::int64_t before = schedulers[r].unfinished();
      schedulers[r].complete(now);
      client.finished(now, before - schedulers[r].unfinished());
    }
  }
  for (const Scheduler& sch : schedulers) {
    if (sch.unfinished() > 0) throw std::logic_error("serving: a rank has requests but cannot schedule any");
    result.itl_s.insert(result.itl_s.end(), sch.itl_s().begin(), sch.itl_s().end());
  }
  return result;
}

ServingResult simulate_serving(const Scenario& scenario, const std::vector<Request>& requests,
                               const ServeOptions& options) {
  if (!scenario.inference) throw std::invalid_argument("serve: the scenario has no inference section");
  KvCacheConfig kv = options.kv;
  kv.graph_sequences = options.max_sequences;  // CUDA graphs up to the engine's max batch
  const bool whole_prompts = !scenario.stack.serving_chunked_prefill;
  if (whole_prompts) {  // the budget fits the longest prompt (before the pool is sized: it profiles a pass of it)
    std::int64_t longest_prompt = 0;
    for (const Request& r : requests) longest_prompt = std::max(longest_prompt, r.prompt_len);
    kv.max_batched_tokens = whole_prompt_token_budget(kv.max_batched_tokens, longest_prompt, options.max_sequences);
  }
  const KvCapacity capacity = kv_capacity(scenario, engine_kv_config(scenario, kv));
  if (capacity.blocks <= 0) {
    const StageKvCapacity& st = capacity.stages[capacity.limiting_stage];
    throw std::invalid_argument("serve: no room for the KV cache on stage " + std::to_string(st.stage) + ": weights " +
                                std::to_string(st.weight_bytes) + " B + buffers " + std::to_string(st.buffer_bytes) +
                                " B + activations " + std::to_string(st.activation_bytes) + " B exceed the usable " +
                                std::to_string(st.usable_bytes) + " B");
  }
  SchedulerLimits limits;
  limits.block_tokens = options.kv.block_tokens;
  limits.max_batched_tokens = kv.max_batched_tokens;
  limits.whole_prompts = whole_prompts;
  limits.max_sequences = options.max_sequences;
  limits.attention_window = scenario.model.sliding_window;
  limits.windowed_kv_share = freed_window_share(scenario.model, scenario.stack);
  limits.record_itl = options.keep_itl;
  limits.output_reserve = scenario.stack.serving_output_reserve;
  limits.prefill_first = scenario.stack.serving_prefill_first;
  limits.overlap_pickup = scenario.stack.serving_async;
  limits.idle_fetch_one = scenario.stack.serving_idle_fetch_one;
  limits.graph_batches =
      captured_graph_batches(options.cuda_graph_batch_sizes, limits.max_sequences, limits.max_batched_tokens);
  // the frontend's CPU work at this node's CPU speed (HostSpec::cpu_time_scale)
  limits.request_path_s = scenario.stack.serving_request_s * scenario.cluster.host.cpu_time_scale;
  limits.request_token_s = scenario.stack.serving_request_token_s * scenario.cluster.host.cpu_time_scale;
  if (const auto& spec = scenario.inference->speculative) {
    limits.speculative_tokens = spec->tokens;
    limits.acceptance_rate = spec->acceptance_rate;
    limits.acceptance_seed = options.acceptance_seed;
  }
  if (options.swap_space_bytes > 0) limits.swap_blocks = swap_blocks(scenario, capacity, options);
  const PassCostModel model(scenario);
  const std::vector<Request> arriving = options.prefix_tokens > 0 && options.prefix_hit_rate > 0
                                            ? with_prefix_cache(requests, options.prefix_tokens, options.prefix_hit_rate,
                                                                limits.block_tokens, options.prefix_seed)
                                            : requests;
  // a cached prefix's whole blocks are held by the cache, once: as long as the longest hit
  std::int64_t longest = 0;
  for (const Request& r : arriving) longest = std::max(longest, r.cached_prefix);
  const std::int64_t prefix_blocks = longest / limits.block_tokens;
  if (prefix_blocks >= capacity.blocks)
    throw std::invalid_argument("serve: the cached prefix (" + std::to_string(prefix_blocks) + " blocks) fills the KV cache");
  const std::int64_t steps = serving_sequence_steps(arriving, limits);
  if (options.max_sequence_steps > 0 && steps > options.max_sequence_steps)
    throw ScenarioError("--max-sequence-steps", std::to_string(options.max_sequence_steps),
                        "is below the " + std::to_string(steps) + " sequence steps (output tokens and prefill chunks) "
                        "the " + std::to_string(arriving.size()) + " requests need (about 1.5M a second): simulate "
                        "fewer requests or shorter outputs, or raise it");
  // attention-DP replicas that are one expert-parallel group run their passes in lockstep
  const Plan& plan = scenario.plan;
  if (scenario.model.moe && plan.ep > 1 && plan.dp == plan.ep && plan.pp == 1 && options.replicas.replicas == plan.dp &&
      !scenario.inference->speculative && limits.swap_blocks == 0)
    return run_lockstep_serving(
        arriving, capacity.blocks - prefix_blocks, limits,
        [&](const std::vector<IterationShape>& ranks) { return model.target().ep_lockstep_pass_s(ranks); },
        options.keep_occupancy, options.replicas, options.max_concurrency);
  return run_serving(arriving, capacity.blocks - prefix_blocks, limits, scenario.plan.pp,
                     [&](const PassShape& pass) { return with_swap_time(model.cost(pass), pass, capacity, scenario.cluster); },
                     options.keep_occupancy, options.replicas, options.max_concurrency);
}

}  // namespace twinsim
