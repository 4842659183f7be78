#include "sim/search/search_space.hpp"

#include <numeric>
#include <stdexcept>

#include "scenario/default_stack.hpp"

namespace twinsim {

std::vector<int> divisors(std::int64_t n) {
  std::vector<int> d;
  for (std::int64_t k = 1; k <= n; ++k)
    if (n % k == 0) d.push_back(static_cast<int>(k));
  return d;
}

SearchSpace make_search_space(const Scenario& base, const SearchSpaceOptions& options) {
  if (!base.training) throw std::invalid_argument("plan search needs a training scenario");
  if (options.min_gpus < 1 || options.max_gpus < options.min_gpus)
    throw std::invalid_argument("plan search: GPU range must satisfy 1 <= min <= max");
  if (options.shard_count < 1 || options.shard_index < 0 || options.shard_index >= options.shard_count)
    throw std::invalid_argument("plan search: shard index out of range");
  const ModelSpec& m = base.model;
  SearchSpace sp;
  sp.options = options;
  sp.global_batch = base.training->global_batch;
  sp.seq_len = base.training->seq_len;
  sp.layers = m.layers;
  sp.moe = m.moe.has_value();
  sp.scenario_plan = base.plan;
  sp.gpus_per_node = base.cluster.gpus_per_node;
  const int max_tp = options.max_tp > 0 ? options.max_tp : base.cluster.gpus_per_node;
  // TP splits heads, query groups and the FFN columns (Shoeybi et al. 2019, §3)
  std::int64_t tp_splits = std::gcd(std::gcd(m.heads, m.kv_heads), m.ffn_hidden);
  if (m.moe) tp_splits = std::gcd(tp_splits, m.moe->expert_ffn_hidden);
  for (int t : divisors(tp_splits))
    if (t <= max_tp) sp.tp.push_back(t);
  sp.pp = divisors(m.layers);
  // CP: Megatron cuts the sequence into 2 * cp chunks for load balance
  sp.cp.push_back(1);
  for (int c = 2; c <= options.max_cp; ++c)
    if (sp.seq_len % (2 * c) == 0) sp.cp.push_back(c);
  sp.dp = divisors(sp.global_batch);
  while (!sp.dp.empty() && sp.dp.back() > options.max_gpus) sp.dp.pop_back();
  sp.experts_divisors = m.moe ? divisors(m.moe->experts) : std::vector<int>{1};
  if (base.stack.hf_modeling()) {  // Hugging Face's modeling code: data parallelism (DDP, FSDP) only
    sp.tp = sp.pp = sp.cp = {1};
    // DeepSpeed's optimizer offload is counted for a bf16 model (hf_bf16), not for autocast's
    // fp32 one; activation offload is Megatron-core's (scenario/validate.cpp)
    if (base.stack.hf_eager()) sp.options.consider_offload = false;
    sp.activation_offload = false;
    sp.selective_recompute = false;
  }
  if (base.stack.fused_linear_loss()) sp.tp = {1};  // its loss holds the whole vocabulary (scenario/validate.cpp)
  if (base.training->lora || base.stack.fp8_params) sp.max_zero = 2;
  if (base.training->lora) {
    sp.lora = true;
    sp.options.consider_offload = false;
    sp.activation_offload = false;
  }
  sp.offload_tiers = sp.options.consider_offload && base.cluster.host.nvme_described();
  sp.hybrid_sharding = base.stack.zero_hybrid_sharding || default_stack_follows_plan(base);
  return sp;
}

std::int64_t count_whole_space_up_to(SearchSpace space, std::int64_t limit) {
  struct Enough {};
  space.options.shard_index = 0, space.options.shard_count = 1;
  std::int64_t n = 0;
  try {
    for_each_candidate(space, [&](const Candidate&) {
      if (++n > limit) throw Enough{};
    });
  } catch (const Enough&) {
  }
  return n;
}

std::int64_t count_candidates(const SearchSpace& space) {
  std::int64_t n = 0;
  for_each_candidate(space, [&](const Candidate&) { ++n; });
  return n;
}

}  // namespace twinsim
