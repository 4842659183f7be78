#pragma once
// One point of the plan search space: the base scenario's plan knobs with the searched ones
// set (models/plan_fields.hpp says which), plus the training micro-batch. Plain data (no
// strings, no vectors) so the analytic pass walks millions of them without allocating and
// the sharded search sends them between processes as bytes.
#include <cstdint>
#include <string>

#include "models/plan.hpp"
#include "models/plan_fields.hpp"
#include "scenario/scenario.hpp"

namespace twinsim {

struct Candidate : PlanKnobs {  // every stage holds layers / pp (stage_layers is not searched)
  int micro_batch = 1;

  std::int64_t gpus() const { return world_size(); }
};

// A candidate's printed fields in the order every printed form keeps: the parallel degrees,
// the micro-batch, then the searched settings (models/plan_fields.hpp).
template <class OnKnob, class OnMicroBatch>
void for_each_candidate_field(OnKnob&& on_knob, OnMicroBatch&& on_micro_batch) {
  for_each_searched_knob([&](const auto& knob) {
    if (knob.in_search == InSearch::degree) on_knob(knob);
  });
  on_micro_batch();
  for_each_searched_knob([&](const auto& knob) {
    if (knob.in_search != InSearch::degree) on_knob(knob);
  });
}

// The scenario's own settings a searched plan keeps where they apply to it, and drops
// where they do not: ZeRO++ with ZeRO-3's per-layer gathers, gradient compression with ZeRO
// 0-2 over more than one DP rank, hpZ where the plan's layout allows it (zero_comm prices
// each only there). The search space calls it on every candidate it makes.
// ... and plan.dp_replicate (hybrid sharding) where `replicate` fits the plan: ZeRO 1-3 over
// more than one replica dividing dp, without DeepSpeed's own knobs, compression or experts.
void keep_scenario_settings(PlanKnobs& plan, const PlanKnobs& scenario, int gpus_per_node);
bool hybrid_sharding_fits(const PlanKnobs& plan, int replicate);
// The replicas that leave one shard group a node (FSDP1 HYBRID_SHARD's layout, IBM's fms-fsdp
// "hsdp": shard inside the node, replicate across): the data-parallel group over the
// data-parallel ranks a node holds (dp_ranks_per_node), where those fill whole nodes and the
// group spans more than one; else 1. The search tries it beside 1 for its ZeRO-3 plans.
int node_shard_replicas(const PlanKnobs& plan, int gpus_per_node);

// Writes the candidate's knobs into a Plan (stage_layers left empty: layers / pp each).
void apply_to_plan(const Candidate& c, Plan& plan);

// The base scenario with the candidate's plan and micro-batch, as many catalog nodes as
// it needs, and, where the base got its stack by default, the default of the candidate's own
// plan (scenario/default_stack.hpp: a ZeRO-3 plan with pp > 1 gets torchtitan-compile, a ZeRO-1
// plan megatron-core); then resolve_and_validate: the same checks `twinsim simulate` runs.
// Throws ScenarioError when the candidate breaks a scenario rule.
Scenario candidate_scenario(const Scenario& base, const Candidate& c);

// The candidate as `--set` overrides of the scenario it was searched from, e.g. "plan.tp=8
// plan.pp=4 ... training.micro_batch=1": every searched knob, and the scenario's settings
// the candidate changed (keep_scenario_settings), and an uneven stage_layers cleared.
std::string to_overrides(const Candidate& c, const Plan& scenario);
// Short human-readable form, e.g. "tp8 pp4 dp32 cp1 mb1 zero1 selective 1f1b sp".
std::string describe(const Candidate& c);

}  // namespace twinsim
