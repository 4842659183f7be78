// Names of the plan and workload enums as scenario files spell them.
#include <algorithm>

#include "models/model_spec.hpp"
#include "models/plan.hpp"
#include "models/workload.hpp"

namespace twinsim {

std::int64_t dp_ranks_per_node(const PlanKnobs& plan, int gpus_per_node) {
  const std::int64_t stride = plan.tp;
  return stride >= gpus_per_node ? 1 : std::min<std::int64_t>(plan.dp_group_size(), gpus_per_node / stride);
}

std::int64_t dp_bucket_params(const PlanKnobs& plan) {
  if (plan.dp_bucket_size > 0) return plan.dp_bucket_size;
  return std::max<std::int64_t>(40'000'000, 1'000'000LL * plan.dp * plan.cp);
}

int hpz_partition(const PlanKnobs& plan, int gpus_per_node) {
  const int hpz = plan.zero_hpz_partition_size;
  if (hpz <= 1 || !plan.shards_params() || !plan.overlap_grad_reduce) return 1;
  return dp_ranks_per_node(plan, gpus_per_node) % hpz == 0 ? hpz : 1;
}

std::string_view to_string(Recompute r) {
  switch (r) {
    case Recompute::none: return "none";
    case Recompute::selective: return "selective";
    case Recompute::full: return "full";
    case Recompute::selective_op: return "selective_op";
  }
  return "?";
}

std::string_view to_string(RecomputeModule m) {
  switch (m) {
    case RecomputeModule::core_attn: return "core_attn";
    case RecomputeModule::moe_act: return "moe_act";
    case RecomputeModule::layernorm: return "layernorm";
    case RecomputeModule::mla_up_proj: return "mla_up_proj";
    case RecomputeModule::mlp: return "mlp";
    case RecomputeModule::moe: return "moe";
    case RecomputeModule::shared_experts: return "shared_experts";
  }
  return "?";
}

std::string_view to_string(Schedule s) {
  switch (s) {
    case Schedule::gpipe: return "gpipe";
    case Schedule::one_f_one_b: return "1f1b";
    case Schedule::interleaved: return "interleaved";
    case Schedule::dualpipe: return "dualpipe";
  }
  return "?";
}

std::string_view to_string(Activation a) {
  switch (a) {
    case Activation::gelu: return "gelu";
    case Activation::swiglu: return "swiglu";
    case Activation::geglu: return "geglu";
  }
  return "?";
}

std::string_view to_string(Norm n) { return n == Norm::rmsnorm ? "rmsnorm" : "layernorm"; }

std::string_view to_string(Position p) { return p == Position::rope ? "rope" : "learned"; }

std::string_view to_string(RopeScaling r) { return r == RopeScaling::yarn ? "yarn" : "none"; }

std::string_view to_string(Optimizer o) { return o == Optimizer::adam ? "adam" : "sgd"; }

std::string_view to_string(SpeculativeMethod m) { return m == SpeculativeMethod::draft ? "draft" : "ngram"; }

bool parse_recompute(std::string_view name, Recompute& out) {
  for (Recompute r : kRecomputePolicies)
    if (to_string(r) == name) return out = r, true;
  return false;
}

bool parse_schedule(std::string_view name, Schedule& out) {
  for (Schedule s : kSchedules)
    if (to_string(s) == name) return out = s, true;
  return false;
}

std::string_view to_string(GradCompression c) {
  switch (c) {
    case GradCompression::none: return "none";
    case GradCompression::int8: return "int8";
    case GradCompression::int4: return "int4";
    case GradCompression::topk: return "topk";
    case GradCompression::powersgd: return "powersgd";
  }
  return "none";
}

bool parse_grad_compression(std::string_view name, GradCompression& out) {
  for (GradCompression c : kGradCompressions)
    if (to_string(c) == name) return out = c, true;
  return false;
}

bool parse_optimizer(std::string_view name, Optimizer& out) {
  for (Optimizer o : {Optimizer::adam, Optimizer::sgd})
    if (to_string(o) == name) return out = o, true;
  return false;
}

}  // namespace twinsim
