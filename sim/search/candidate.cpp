#include "sim/search/candidate.hpp"

#include <sstream>

#include "scenario/validate.hpp"

namespace twinsim {

void apply_to_plan(const Candidate& c, Plan& plan) {
  plan.tp = c.tp;
  plan.pp = c.pp;
  plan.dp = c.dp;
  plan.cp = c.cp;
  plan.ep = c.ep;
  plan.zero = c.zero;
  plan.recompute = c.recompute;
  plan.schedule = c.schedule;
  plan.virtual_stages = c.virtual_stages;
  plan.sequence_parallel = c.sequence_parallel;
  plan.overlap_grad_reduce = c.overlap_grad_reduce;
  plan.overlap_param_gather = c.overlap_param_gather;
  plan.tp_comm_overlap = c.tp_comm_overlap;
  plan.offload_optimizer = c.offload_optimizer;
  plan.stage_layers.clear();
}

Scenario candidate_scenario(const Scenario& base, const Candidate& c) {
  Scenario s = base;
  apply_to_plan(c, s.plan);
  // the scenario's ZeRO++ setting goes with its ZeRO-3 plans (zero_comm ignores it otherwise)
  if (c.zero != 3 || !c.overlap_grad_reduce) s.plan.zero_quantized_weights = s.plan.zero_quantized_gradients = false;
  // and its gradient compression with its ZeRO 0-2 plans of more than one DP rank
  if (c.zero == 3 || c.dp * c.cp == 1) s.plan.gradient_compression = GradCompression::none;
  s.plan.zero_hpz_partition_size = hpz_partition(s.plan, s.cluster.gpus_per_node);
  if (s.training) s.training->micro_batch = c.micro_batch;
  s.cluster.nodes = 0;  // a node type grows to what the plan needs (scenario/validate.cpp)
  resolve_and_validate(s);
  return s;
}

std::string to_overrides(const Candidate& c) {
  std::ostringstream o;
  o << "plan.tp=" << c.tp << " plan.pp=" << c.pp << " plan.dp=" << c.dp << " plan.cp=" << c.cp
    << " plan.ep=" << c.ep << " plan.zero=" << c.zero << " plan.recompute=" << to_string(c.recompute)
    << " plan.schedule=" << to_string(c.schedule) << " plan.virtual_stages=" << c.virtual_stages
    << " plan.sequence_parallel=" << (c.sequence_parallel ? "true" : "false")
    << " plan.overlap_grad_reduce=" << (c.overlap_grad_reduce ? "true" : "false")
    << " plan.overlap_param_gather=" << (c.overlap_param_gather ? "true" : "false")
    << " plan.tp_comm_overlap=" << (c.tp_comm_overlap ? "true" : "false")
    << " plan.offload_optimizer=" << (c.offload_optimizer ? "true" : "false")
    << " training.micro_batch=" << c.micro_batch;
  return o.str();
}

std::string describe(const Candidate& c) {
  std::ostringstream o;
  o << "tp" << c.tp << " pp" << c.pp << " dp" << c.dp << " cp" << c.cp;
  if (c.ep > 1) o << " ep" << c.ep;
  o << " mb" << c.micro_batch << " zero" << c.zero << " " << to_string(c.recompute) << " "
    << to_string(c.schedule);
  if (c.virtual_stages > 1) o << " v" << c.virtual_stages;
  if (c.sequence_parallel) o << " sp";
  if (!c.overlap_grad_reduce) o << " no-grad-overlap";
  if (!c.overlap_param_gather) o << " no-param-overlap";
  if (c.tp_comm_overlap) o << " tp-overlap";
  if (c.offload_optimizer) o << " offload";
  return o.str();
}

}  // namespace twinsim
