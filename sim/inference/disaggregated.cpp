#include "sim/inference/disaggregated.hpp"

#include <algorithm>
#include <numeric>

#include "sim/cost/collective_cost.hpp"
#include "sim/memory/inference.hpp"

namespace twinsim {

Scenario prefill_replica(const Scenario& s) {
  Scenario p = s;
  p.plan.tp = s.inference->disaggregation->prefill_tp_or(s.plan.tp);
  p.inference->disaggregation.reset();
  p.inference->speculative.reset();
  p.cluster.nodes = (p.plan.world_size() + p.cluster.gpus_per_node - 1) / p.cluster.gpus_per_node;
  return p;
}

Scenario decode_replica(const Scenario& s) {
  Scenario d = s;
  d.inference->disaggregation.reset();
  d.stack.serving_request_s = 0;  // a request comes in through the prefill pool; here by its K,V transfer
  d.stack.serving_request_token_s = 0;
  return d;
}

double kv_transfer_s(const Scenario& s, std::int64_t prompt_tokens) {
  const Disaggregation& d = *s.inference->disaggregation;
  const int senders = d.prefill_tp_or(s.plan.tp);
  const double bytes = static_cast<double>(prompt_tokens) *
                       static_cast<double>(kv_cache_bytes_per_token(s.model, s.model.layers, 1, s.inference->kv_dtype));
  GroupLayout pair;  // one prefill GPU and one decode GPU: in one node or across two
  pair.ranks = 2;
  pair.ranks_per_node = d.kv_over_nvlink ? 2 : 1;
  return collective_time_s(s.cluster, CollectiveOp::send_recv, pair, bytes / senders);
}

namespace {

// Round-robin by position: replica k gets requests k, k + n, ... (indices into `requests`).
std::vector<std::vector<std::size_t>> round_robin(std::size_t count, int replicas) {
  std::vector<std::vector<std::size_t>> out(replicas);
  for (std::size_t i = 0; i < count; ++i) out[i % replicas].push_back(i);
  return out;
}

// Simulates `scenario` serving requests[indices] (in their order) and returns each one's times.
std::vector<RequestTimes> serve_subset(const Scenario& scenario, const std::vector<Request>& requests,
                                       const std::vector<std::size_t>& indices, const ServeOptions& options,
                                       ServingResult& total, std::vector<Request>* arrived = nullptr) {
  std::vector<Request> subset;
  for (std::size_t i : indices) subset.push_back(requests[i]);
  if (subset.empty()) return {};
  const ServingResult r = simulate_serving(scenario, subset, options);
  total.passes += r.passes;
  total.busy_s += r.busy_s;
  total.swapped_out_blocks += r.swapped_out_blocks;
  total.swapped_in_blocks += r.swapped_in_blocks;
  total.verify_steps += r.verify_steps;
  total.verified_tokens += r.verified_tokens;
  if (total.total_blocks == 0) {  // the first replica's cache stands for its pool's occupancy
    total.total_blocks = r.total_blocks;
    total.block_tokens = r.block_tokens;
    total.occupancy_summary = r.occupancy_summary;
    total.occupancy = r.occupancy;
  }
  if (arrived)
    for (std::size_t k = 0; k < indices.size(); ++k) (*arrived)[indices[k]] = r.requests[k];
  return r.times;
}

}  // namespace

DisaggregatedServing simulate_disaggregated(const Scenario& s, const std::vector<Request>& requests,
                                           const ServeOptions& options) {
  const Disaggregation& d = *s.inference->disaggregation;
  DisaggregatedServing out;
  const Scenario prefill = prefill_replica(s), decode = decode_replica(s);
  out.prefill_gpus = static_cast<std::int64_t>(d.prefill_replicas) * prefill.plan.tp;
  out.decode_gpus = static_cast<std::int64_t>(d.decode_replicas) * decode.plan.tp;
  ServingResult& result = out.result;
  result.requests = requests;
  result.times.assign(requests.size(), RequestTimes{});
  // 1. the prompts: each request's prefill samples its first token
  std::vector<Request> prompts = requests;
  for (Request& r : prompts) r.output_len = 1;
  ServingResult prefill_total;
  for (const auto& indices : round_robin(requests.size(), d.prefill_replicas)) {
    const std::vector<RequestTimes> t = serve_subset(prefill, prompts, indices, options, prefill_total, &prompts);
    for (std::size_t k = 0; k < indices.size(); ++k) result.times[indices[k]] = t[k];
  }
  for (std::size_t i = 0; i < requests.size(); ++i) {
    result.requests[i].cached_prefix = prompts[i].cached_prefix;  // prefix-cache hits happen on the prefill side
    result.times[i].finish_s = result.times[i].first_token_s;
  }
  // 2. the K,V to the decode pool, which takes the requests in the order it arrives
  out.transfer_s.resize(requests.size());
  std::vector<Request> decoding;
  std::vector<std::size_t> origin;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    out.transfer_s[i] = kv_transfer_s(s, requests[i].prompt_len);
    if (requests[i].output_len < 2) continue;  // done at the prefill
    Request r = requests[i];
    r.arrival_s = result.times[i].first_token_s + out.transfer_s[i];
    r.cached_prefix = 0;
    r.kv_arrives = true;
    decoding.push_back(r);
    origin.push_back(i);
  }
  std::vector<std::size_t> order(decoding.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return decoding[a].arrival_s < decoding[b].arrival_s; });
  std::vector<Request> arriving;
  for (std::size_t k : order) arriving.push_back(decoding[k]);
  ServeOptions decode_options = options;
  decode_options.prefix_tokens = 0;  // the prompt's K,V arrives whole
  for (const auto& indices : round_robin(arriving.size(), d.decode_replicas)) {
    const std::vector<RequestTimes> t = serve_subset(decode, arriving, indices, decode_options, result);
    for (std::size_t k = 0; k < indices.size(); ++k) {
      RequestTimes& times = result.times[origin[order[indices[k]]]];
      times.finish_s = t[k].finish_s;
      times.preemptions += t[k].preemptions;
    }
  }
  result.passes += prefill_total.passes;
  result.busy_s += prefill_total.busy_s;
  result.swapped_out_blocks += prefill_total.swapped_out_blocks;
  result.swapped_in_blocks += prefill_total.swapped_in_blocks;
  return out;
}

}  // namespace twinsim
