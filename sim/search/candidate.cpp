#include "sim/search/candidate.hpp"

#include <algorithm>
#include <functional>
#include <sstream>
#include <type_traits>

#include "scenario/default_stack.hpp"
#include "scenario/validate.hpp"

namespace twinsim {

void keep_scenario_settings(PlanKnobs& plan, const PlanKnobs& scenario, int gpus_per_node) {
  const bool layer_gathers = plan.shards_params() && plan.overlap_grad_reduce;
  plan.zero_quantized_weights = layer_gathers && scenario.zero_quantized_weights;
  plan.zero_quantized_gradients = layer_gathers && scenario.zero_quantized_gradients;
  const bool dp_reduce = !plan.shards_params() && plan.dp_group_size() > 1;
  plan.gradient_compression = dp_reduce ? scenario.gradient_compression : GradCompression::none;
  if (plan.gradient_compression == GradCompression::none) {  // their keys come only with their compression
    plan.gradient_topk_ratio = PlanKnobs{}.gradient_topk_ratio;
    plan.gradient_powersgd_rank = PlanKnobs{}.gradient_powersgd_rank;
  }
  plan.zero_hpz_partition_size = scenario.zero_hpz_partition_size;  // hpz_partition reads the asked size
  plan.zero_hpz_partition_size = hpz_partition(plan, gpus_per_node);
  // Megatron's module list goes with selective recomputation (its --recompute-granularity)
  plan.recompute_modules = plan.recompute == Recompute::selective ? scenario.recompute_modules : 0;
  // activation offload where Megatron-core allows it: one stage, no recomputation
  plan.offload_activations_layers =
      plan.pp == 1 && plan.recompute == Recompute::none ? scenario.offload_activations_layers : 0;
  plan.offload_params = scenario.offload_params && layer_gathers && plan.dp_group_size() > 1 && plan.offload_optimizer &&
                        plan.zero_hpz_partition_size == 1;
  // ZeRO-Infinity's drives where DeepSpeed allows them: ZeRO-3 with its optimizer offloaded
  plan.offload_device = plan.offload_optimizer && plan.shards_params() ? scenario.offload_device : OffloadDevice::cpu;
  plan.dp_replicate = hybrid_sharding_fits(plan, scenario.dp_replicate) ? scenario.dp_replicate : 1;
}

bool hybrid_sharding_fits(const PlanKnobs& plan, int replicate) {
  // ZeRO with PyTorch's or Megatron's sharding, its replicas dividing dp (scenario/validate.cpp)
  return replicate > 1 && plan.shards_optimizer() && plan.dp % replicate == 0 && !deepspeed_only_plan(plan) &&
         plan.gradient_compression == GradCompression::none && plan.ep == 1 && plan.etp() == plan.tp;
}

int node_shard_replicas(const PlanKnobs& plan, int gpus_per_node) {
  const std::int64_t per_node = dp_ranks_per_node(plan, gpus_per_node), group = plan.dp_group_size();
  // replicas = (dp x cp) / (the node's dp x cp ranks), the node's tp x shard ranks filling it
  const bool whole_nodes = per_node * plan.tp == gpus_per_node && group % per_node == 0;
  return whole_nodes && group > per_node ? static_cast<int>(group / per_node) : 1;
}

void apply_to_plan(const Candidate& c, Plan& plan) {
  static_cast<PlanKnobs&>(plan) = c;
  plan.stage_layers.clear();
}

Scenario candidate_scenario(const Scenario& base, const Candidate& c) {
  Scenario s = base;
  apply_to_plan(c, s.plan);
  if (s.training) s.training->micro_batch = c.micro_batch;
  if (default_stack_follows_plan(base)) apply_default_stack(s);  // the candidate's own plan picks it
  s.cluster.nodes = 0;  // a node type grows to what the plan needs (scenario/validate.cpp)
  resolve_and_validate(s);
  return s;
}

std::string to_overrides(const Candidate& c, const Plan& scenario) {
  std::ostringstream o;
  for_each_plan_knob([&](const auto& knob) {
    if constexpr (std::is_same_v<std::decay_t<decltype(knob)>, LayerListKnob>) {
      // a scenario's uneven split came from its file (a loaded plan always lists its stages'
      // layers); a searched plan splits them evenly
      const std::vector<int>& layers = scenario.*knob.member;
      if (std::adjacent_find(layers.begin(), layers.end(), std::not_equal_to<>()) != layers.end())
        o << "plan." << knob.key << "=[] ";
    } else if (knob.in_search != InSearch::no) {
      o << "plan." << knob.key << "=" << knob_text(knob, c) << " ";
    } else if (c.*knob.member != scenario.*knob.member) {
      // a scenario setting the plan dropped goes back to its default: `null` (a key such as
      // gradient_topk_ratio may not be given without its compression)
      const bool fallback = c.*knob.member == knob.fallback;
      o << "plan." << knob.key << "=" << (fallback ? "null" : knob_text(knob, c)) << " ";
    }
  });
  o << "training.micro_batch=" << c.micro_batch;
  return o.str();
}

std::string describe(const Candidate& c) {
  std::ostringstream o;
  auto word = [&](const std::string& w) {
    if (w.empty()) return;
    if (o.tellp() > 0) o << " ";
    o << w;
  };
  for_each_candidate_field([&](const auto& knob) { word(knob_tag(knob, c)); },
                           [&] { word("mb" + std::to_string(c.micro_batch)); });
  return o.str();
}

}  // namespace twinsim
