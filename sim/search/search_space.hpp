#pragma once
// The plan search space: every combination of tp, pp, dp, cp, ep, micro-batch, ZeRO
// stage, recompute policy, schedule, virtual stages, sequence parallelism and overlaps
// that the scenario rules (scenario/validate.cpp) accept for a model and batch.
//
// Candidates are generated valid by construction — each degree is drawn from the
// divisors of what it splits — so the hot loop never throws. tests/unit/search checks
// this against resolve_and_validate on every candidate of small spaces, and that
// every plan the validator accepts is generated.
//
// Hybrid sharding (plan.dp_replicate): a ZeRO-3 plan is tried without replicas and with one
// shard group a node (sim/search/candidate.hpp node_shard_replicas), where the stack allows it;
// other ZeRO plans keep the scenario's replicas where they fit.
//
// Knobs that change nothing are not varied, so no plan appears twice: ZeRO stages
// when dp * cp == 1, overlap_grad_reduce when dp * cp == 1, overlap_param_gather without a
// ZeRO stage, tp_comm_overlap and sequence parallelism when tp == 1.
#include <cstdint>
#include <span>
#include <vector>

#include "scenario/scenario.hpp"
#include "sim/search/candidate.hpp"

namespace twinsim {

struct SearchSpaceOptions {
  std::int64_t min_gpus = 1, max_gpus = 1;
  // Megatron keeps tensor parallelism inside a node (Narayanan et al. 2021, §3.3,
  // takeaway #1); 0 = the cluster's gpus_per_node.
  int max_tp = 0;
  int max_cp = 16;
  int max_micro_batch = 16;
  int max_virtual_stages = 8;
  // Also try every plan with ZeRO-Offload (plan.offload_optimizer; needs cluster.host), and
  // one-stage plans without recomputation with every layer's activations but the last's
  // offloaded (plan.offload_activations_layers): doubles the space, so only when asked
  // (`twinsim search --offload`). Where the node describes its NVMe drives
  // (cluster.host.nvme_read_GBps), each ZeRO-3 plan that offloads is tried on both tiers
  // (plan.offload_device cpu and nvme): the drives hold what CPU memory cannot.
  bool consider_offload = false;
  // Split of the space over processes (MPI): this one takes every shard_count-th
  // (tp, pp, cp, dp) block, starting at shard_index.
  int shard_index = 0, shard_count = 1;
};

// The option lists of one search, computed once from the base scenario.
struct SearchSpace {
  std::vector<int> tp, pp, cp, dp, experts_divisors;
  std::int64_t global_batch = 1, seq_len = 1, layers = 1;
  bool moe = false;
  bool selective_recompute = true;  // Megatron's; Hugging Face checkpoints whole layers only
  bool activation_offload = true;    // Megatron-core's (plan.offload_activations_layers), with consider_offload
  PlanKnobs scenario_plan;  // what each candidate starts from: the knobs the search keeps
  int gpus_per_node = 1;
  // consider_offload on a node that describes its NVMe drives: ZeRO-3 plans that offload are
  // tried on both tiers (plan.offload_device cpu and nvme)
  bool offload_tiers = false;
  // training.lora: the adapters' gradients are reduced layer by layer with overlap, or all at
  // once: ZeRO 0-2, no offloading (scenario/validate.cpp require_lora_scope)
  bool lora = false;
  int max_zero = 3;  // 2 under training.lora and stack.fp8_params (ZeRO-3 not modelled there)
  // hybrid sharding (plan.dp_replicate) is tried for ZeRO-3 plans: the base's stack can run it
  // (stack.zero_hybrid_sharding) or the default stack follows each plan (torchtitan-compile's
  // FSDP2 for ZeRO-3 with replicas, scenario/default_stack.hpp)
  bool hybrid_sharding = false;
  SearchSpaceOptions options;
};

SearchSpace make_search_space(const Scenario& base, const SearchSpaceOptions& options);

std::vector<int> divisors(std::int64_t n);

// Calls visit(const Candidate&) for every candidate; no allocation inside the loops.
template <typename Visit>
void for_each_candidate(const SearchSpace& sp, Visit&& visit);
// The plans of the space (every shard), counting no further than `limit` + 1.
std::int64_t count_whole_space_up_to(SearchSpace space, std::int64_t limit);

// How many candidates the space holds (walks it).
std::int64_t count_candidates(const SearchSpace& space);

// ---------------------------------------------------------------------------------

namespace search_detail {

template <typename Visit>
void for_each_schedule(const SearchSpace& sp, Candidate c, std::int64_t micro_batches, Visit& visit) {
  static constexpr Recompute kEvery[] = {Recompute::none, Recompute::selective, Recompute::full};
  static constexpr Recompute kWholeLayers[] = {Recompute::none, Recompute::full};
  const std::span<const Recompute> policies = sp.selective_recompute ? std::span<const Recompute>(kEvery)
                                                                     : std::span<const Recompute>(kWholeLayers);
  const bool dp_sharded = static_cast<std::int64_t>(c.dp) * c.cp > 1;
  const int zero_max = dp_sharded ? sp.max_zero : 0;
  const auto both_tiers = [&](int zero) { return sp.offload_tiers && zero == 3; };  // DeepSpeed: NVMe with ZeRO-3
  // the scenario's replicas where they fit (keep_scenario_settings), and for ZeRO-3 (FSDP)
  // also none and one shard group a node (node_shard_replicas), each value once
  auto visit_replicas = [&](Candidate& k) {
    const int kept = k.dp_replicate;
    visit(static_cast<const Candidate&>(k));
    if (sp.hybrid_sharding && k.shards_params()) {
      const int others[] = {1, node_shard_replicas(k, sp.gpus_per_node)};
      for (int i = 0; i < 2; ++i) {
        const int r = others[i];
        if (r == kept || (i == 1 && r == others[0]) || (r > 1 && !hybrid_sharding_fits(k, r))) continue;
        k.dp_replicate = r;
        visit(static_cast<const Candidate&>(k));
      }
    }
    k.dp_replicate = kept;
  };
  auto emit = [&](Candidate k) {
    for (int zero = 0; zero <= zero_max; ++zero)
      for (Recompute r : policies)
        for (int og = (c.dp_group_size() > 1 ? 0 : 1); og <= 1; ++og)
          for (int op = (zero > 0 ? 0 : 1); op <= 1; ++op)
            for (int to = 0; to <= (c.tp > 1 ? 1 : 0); ++to)
              for (int off = 0; off <= (sp.options.consider_offload ? 1 : 0); ++off)
                for (int act = 0; act <= (sp.options.consider_offload && sp.activation_offload && c.pp == 1 && sp.layers > 1 ? 1 : 0); ++act)
                  for (int nv = 0; nv <= (both_tiers(zero) ? 1 : 0); ++nv) {
                    if (sp.lora && zero == 2 && og == 0) continue;
                    k.zero = zero;
                    k.recompute = r;
                    k.overlap_grad_reduce = og == 1;
                    k.overlap_param_gather = op == 1;
                    k.tp_comm_overlap = to == 1;
                    k.offload_optimizer = off == 1;
                    keep_scenario_settings(k, sp.scenario_plan, sp.gpus_per_node);
                    if (act == 1) {  // activation offload of every layer but the last (where Megatron-core allows it)
                      if (r != Recompute::none || k.offload_activations_layers == sp.layers - 1) continue;
                      k.offload_activations_layers = static_cast<int>(sp.layers - 1);
                    }
                    if (both_tiers(zero)) {  // each tier once
                      if (nv == 1 && !k.offload_optimizer) continue;
                      k.offload_device = nv == 1 ? OffloadDevice::nvme : OffloadDevice::cpu;
                    }
                    visit_replicas(k);
                  }
  };
  c.virtual_stages = 1;
  // one stage: Megatron's no-pipelining schedule, each micro-batch's forward then its
  // backward, holding one micro-batch's activations as 1F1B does (GPipe would hold all)
  c.schedule = c.pp == 1 ? Schedule::one_f_one_b : Schedule::gpipe;
  emit(c);
  if (c.pp == 1) return;
  c.schedule = Schedule::one_f_one_b;
  emit(c);
  // interleaved: v divides the layers of a stage (Megatron's
  // --num-layers-per-virtual-pipeline-stage; a scenario may split them unevenly, the search
  // offers even chunks only); Megatron needs whole rounds of pp micro-batches
  // (scenario/validate.cpp)
  if (micro_batches % c.pp != 0) return;
  const std::int64_t stage_layers = sp.layers / c.pp;
  for (int v = 2; v <= sp.options.max_virtual_stages && v <= stage_layers; ++v) {
    if (stage_layers % v != 0) continue;
    c.schedule = Schedule::interleaved, c.virtual_stages = v;
    emit(c);
  }
}

}  // namespace search_detail

template <typename Visit>
void for_each_candidate(const SearchSpace& sp, Visit&& visit) {
  std::int64_t block = 0;
  for (int tp : sp.tp)
    for (int pp : sp.pp)
      for (int cp : sp.cp) {
        const std::int64_t model_parallel = static_cast<std::int64_t>(tp) * pp * cp;
        if (model_parallel > sp.options.max_gpus) continue;
        for (int dp : sp.dp) {
          const std::int64_t gpus = model_parallel * dp;
          if (gpus < sp.options.min_gpus || gpus > sp.options.max_gpus) continue;
          if (block++ % sp.options.shard_count != sp.options.shard_index) continue;
          for (int mb = 1; mb <= sp.options.max_micro_batch; ++mb) {
            if (sp.global_batch % (static_cast<std::int64_t>(mb) * dp) != 0) continue;
            const std::int64_t micro_batches = sp.global_batch / (static_cast<std::int64_t>(mb) * dp);
            for (int sp_on = 0; sp_on <= (tp > 1 ? 1 : 0); ++sp_on) {
              // sequence parallelism splits the (CP-local) sequence over TP ranks
              if (sp_on && (sp.seq_len / cp) % tp != 0) continue;
              // the experts' TP: every tp value for an MoE model, else the attention's
              const std::span<const int> expert_tps = sp.moe ? std::span<const int>(sp.tp) : std::span<const int>(&tp, 1);
              for (int ep : sp.experts_divisors)
                for (int etp : expert_tps) {
                  // MoE parallel folding: the experts' ep x expert_tp groups tile the stage's
                  // tp x cp x dp ranks; with TP, EP or an expert TP of its own needs SP
                  // (scenario/validate.cpp validate_expert_layout)
                  if ((static_cast<std::int64_t>(tp) * cp * dp) % (static_cast<std::int64_t>(ep) * etp) != 0) continue;
                  if (sp.moe && tp > 1 && (ep > 1 || etp != tp) && sp_on == 0) continue;
                  Candidate c{sp.scenario_plan, mb};
                  c.tp = tp, c.pp = pp, c.cp = cp, c.dp = dp, c.ep = ep;
                  c.expert_tp = etp == tp ? 0 : etp;  // 0: the experts follow plan.tp
                  c.sequence_parallel = sp_on == 1;
                  search_detail::for_each_schedule(sp, c, micro_batches, visit);
                }
            }
          }
        }
      }
}

}  // namespace twinsim
