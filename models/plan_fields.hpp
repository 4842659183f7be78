#pragma once
// The `plan` section's knobs, each described once (docs/SCENARIO.md, "plan"): its key, its
// member, its default and range, and how a searched plan prints it. The scenario reader,
// the search's printed plans (JSON, CSV, `--set` overrides, the short form) and their
// canonical order, and the Python module's resolved plan all walk this list. A new knob is
// a member in plan.hpp and a row here; then its rules (scenario/validate.cpp), its cost,
// and the search space (sim/search/search_space.hpp) if the search varies it.
#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "models/plan.hpp"

namespace twinsim {

// Where a knob shows in a searched plan (sim/search/candidate.hpp): not at all (a scenario
// setting each searched plan keeps), as a parallel degree (printed first, before the
// micro-batch), or as a searched setting after it. A `late_setting` came after the search
// CSV's first release: its column follows the metrics, so the earlier columns keep their place.
enum class InSearch { no, degree, setting, late_setting };

struct IntKnob {
  std::string_view key;
  int PlanKnobs::*member;
  int fallback, min, max;  // the fallback may lie outside [min, max]: plan.dp's 0, "the rest"
  InSearch in_search;
  std::string_view tag;  // the short form prints tag + value ("tp8") ...
  bool tag_always;       // ... always, or only away from the fallback ("ep2", "v2")
};

struct BoolKnob {
  std::string_view key;
  bool PlanKnobs::*member;
  bool fallback;
  InSearch in_search;
  std::string_view tag;  // the short form prints it where the value is not the fallback
};

template <class E>
struct ChoiceKnob {
  std::string_view key;
  E PlanKnobs::*member;
  E fallback;
  const E* values;  // every value, in the order files list them; each named by to_string(E)
  int count;
  InSearch in_search;       // the short form prints the value's name ...
  bool tag_always = true;   // ... always, or only away from the fallback ("nvme")
};

struct RatioKnob {  // a real number in [min, max]; never searched
  std::string_view key;
  double PlanKnobs::*member;
  double fallback, min, max;
  InSearch in_search = InSearch::no;
};

// plan.recompute_modules: a list of RecomputeModule names, a bit each; never searched.
struct ModuleSetKnob {
  std::string_view key;
  std::uint32_t PlanKnobs::*member;
  std::uint32_t fallback = 0;
  InSearch in_search = InSearch::no;
};

struct LayerListKnob {  // plan.stage_layers: a layer count per stage; never searched
  std::string_view key;
  std::vector<int> Plan::*member;
  int min, max;
  InSearch in_search = InSearch::no;
};

inline constexpr int kMaxPlanDegree = 1 << 24;

template <class E, int N>
ChoiceKnob<E> choice_knob(std::string_view key, E PlanKnobs::*member, E fallback, const E (&values)[N],
                          InSearch in_search, bool tag_always = true) {
  return {key, member, fallback, values, N, in_search, tag_always};
}

// Calls visit(row) for every knob, in the order the search prints them.
template <class Visit>
void for_each_plan_knob(Visit&& visit) {
  using S = InSearch;
  using K = PlanKnobs;
  visit(IntKnob{"tp", &K::tp, 1, 1, kMaxPlanDegree, S::degree, "tp", true});
  visit(IntKnob{"pp", &K::pp, 1, 1, kMaxPlanDegree, S::degree, "pp", true});
  visit(IntKnob{"dp", &K::dp, 0, 1, kMaxPlanDegree, S::degree, "dp", true});  // 0: the rest of the GPUs
  visit(IntKnob{"cp", &K::cp, 1, 1, kMaxPlanDegree, S::degree, "cp", true});
  visit(IntKnob{"ep", &K::ep, 1, 1, kMaxPlanDegree, S::degree, "ep", false});
  visit(IntKnob{"zero", &K::zero, 0, 0, 3, S::setting, "zero", true});
  visit(choice_knob("recompute", &K::recompute, Recompute::none, kRecomputePolicies, S::setting));
  visit(choice_knob("schedule", &K::schedule, Schedule::one_f_one_b, kSchedules, S::setting));
  visit(IntKnob{"virtual_stages", &K::virtual_stages, 1, 1, 1 << 16, S::setting, "v", false});
  visit(LayerListKnob{"stage_layers", &Plan::stage_layers, 1, 1 << 20});  // an int each: larger is refused
  visit(BoolKnob{"account_for_embedding_in_pipeline_split", &K::account_for_embedding_in_pipeline_split, false, S::no,
                 ""});
  visit(BoolKnob{"account_for_loss_in_pipeline_split", &K::account_for_loss_in_pipeline_split, false, S::no, ""});
  visit(BoolKnob{"sequence_parallel", &K::sequence_parallel, false, S::setting, "sp"});
  visit(BoolKnob{"overlap_grad_reduce", &K::overlap_grad_reduce, true, S::setting, "no-grad-overlap"});
  visit(BoolKnob{"overlap_param_gather", &K::overlap_param_gather, true, S::setting, "no-param-overlap"});
  visit(IntKnob{"dp_bucket_size", &K::dp_bucket_size, 0, 0, 1 << 30, S::no, "", false});  // 0: Megatron's default
  visit(BoolKnob{"tp_comm_overlap", &K::tp_comm_overlap, false, S::setting, "tp-overlap"});
  visit(BoolKnob{"flash_attention", &K::flash_attention, true, S::no, ""});
  visit(BoolKnob{"fp8_activation_input", &K::fp8_activation_input, false, S::no, ""});
  visit(BoolKnob{"fp8_attention", &K::fp8_attention, false, S::no, ""});
  visit(BoolKnob{"fp8_moe_act_cache", &K::fp8_moe_act_cache, false, S::no, ""});
  visit(BoolKnob{"offload_optimizer", &K::offload_optimizer, false, S::late_setting, "offload"});
  visit(BoolKnob{"offload_params", &K::offload_params, false, S::no, ""});
  visit(IntKnob{"offload_activations_layers", &K::offload_activations_layers, 0, 0, 1 << 20, S::late_setting,
                "act-offload=", false});
  // (after the columns the search CSV printed before it: a late setting's column goes last)
  visit(choice_knob("offload_device", &K::offload_device, OffloadDevice::cpu, kOffloadDevices, S::late_setting, false));
  visit(BoolKnob{"zero_quantized_weights", &K::zero_quantized_weights, false, S::no, ""});
  visit(BoolKnob{"zero_quantized_gradients", &K::zero_quantized_gradients, false, S::no, ""});
  visit(IntKnob{"zero_hpz_partition_size", &K::zero_hpz_partition_size, 1, 1, kMaxPlanDegree, S::no, "", false});
  visit(choice_knob("gradient_compression", &K::gradient_compression, GradCompression::none, kGradCompressions,
                    S::no));
  visit(RatioKnob{"gradient_topk_ratio", &K::gradient_topk_ratio, 0.01, 1e-6, 1});  // with topk only
  visit(IntKnob{"gradient_powersgd_rank", &K::gradient_powersgd_rank, 1, 1, 1024, S::no, "", false});  // powersgd only
  // 0: plan.tp (Megatron's default); a searched plan prints it ("etp1") where it differs
  visit(IntKnob{"expert_tp", &K::expert_tp, 0, 0, kMaxPlanDegree, S::late_setting, "etp", false});
  // HSDP: the search tries one shard group a node for its ZeRO-3 plans and keeps the scenario's
  // where it fits (sim/search/search_space.hpp); a searched plan prints it ("hsdp4") above 1
  visit(IntKnob{"dp_replicate", &K::dp_replicate, 1, 1, kMaxPlanDegree, S::late_setting, "hsdp", false});
  visit(ModuleSetKnob{"recompute_modules", &K::recompute_modules});  // with recompute: selective
  visit(BoolKnob{"moe_a2a_overlap", &K::moe_a2a_overlap, false, S::no, ""});          // Megatron-core's EP A2A overlap
  visit(BoolKnob{"delay_wgrad_compute", &K::delay_wgrad_compute, false, S::no, ""});  // with moe_a2a_overlap
  // Megatron-core's precision-aware optimizer: Adam's moments' and master weights' types
  visit(choice_knob("exp_avg_dtype", &K::exp_avg_dtype, Dtype::fp32, kMomentDtypes, S::no));
  visit(choice_knob("exp_avg_sq_dtype", &K::exp_avg_sq_dtype, Dtype::fp32, kMomentDtypes, S::no));
  visit(choice_knob("main_params_dtype", &K::main_params_dtype, Dtype::fp32, kMainParamsDtypes, S::no));
}

// The row kinds a searched plan can print (a number or a layer list never is searched).
template <class Knob>
inline constexpr bool kSearchable = !std::is_same_v<Knob, RatioKnob> && !std::is_same_v<Knob, LayerListKnob> &&
                                    !std::is_same_v<Knob, ModuleSetKnob>;

// Calls visit(row) for the knobs a searched plan prints (in_search != no), in order.
template <class Visit>
void for_each_searched_knob(Visit&& visit) {
  for_each_plan_knob([&](const auto& knob) {
    if constexpr (kSearchable<std::decay_t<decltype(knob)>>)
      if (knob.in_search != InSearch::no) visit(knob);
  });
}

// A knob's value as a scenario file or `--set` writes it: "8", "true", "1f1b".
inline std::string knob_text(const IntKnob& k, const PlanKnobs& p) { return std::to_string(p.*k.member); }
inline std::string knob_text(const BoolKnob& k, const PlanKnobs& p) { return p.*k.member ? "true" : "false"; }
template <class E>
std::string knob_text(const ChoiceKnob<E>& k, const PlanKnobs& p) {
  return std::string(to_string(p.*k.member));
}
inline std::string knob_text(const RatioKnob& k, const PlanKnobs& p) {
  char text[32];  // the shortest form that reads back as the same double
  return std::string(text, std::to_chars(text, text + sizeof text, p.*k.member).ptr);
}

inline std::string knob_text(const ModuleSetKnob& k, const PlanKnobs& p) {  // a YAML flow list
  std::string text = "[";
  for (RecomputeModule m : kRecomputeModules)
    if ((p.*k.member >> static_cast<int>(m)) & 1u) text += (text.size() > 1 ? ", " : "") + std::string(to_string(m));
  return text + "]";
}

// A knob's word in a plan's short form ("tp8", "sp", "1f1b"), or "" where it prints none.
inline std::string knob_tag(const IntKnob& k, const PlanKnobs& p) {
  const int v = p.*k.member;
  return k.tag_always || v != k.fallback ? std::string(k.tag) + std::to_string(v) : "";
}
inline std::string knob_tag(const BoolKnob& k, const PlanKnobs& p) {
  return p.*k.member != k.fallback ? std::string(k.tag) : "";
}
template <class E>
std::string knob_tag(const ChoiceKnob<E>& k, const PlanKnobs& p) {
  return k.tag_always || p.*k.member != k.fallback ? knob_text(k, p) : "";
}

}  // namespace twinsim
