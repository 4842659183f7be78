#include "sim/training/torch_cp_exchange.hpp"

#include <algorithm>

#include "sim/cost/collective_cost.hpp"
#include "sim/memory/activations.hpp"
#include "sim/training/rank_layout.hpp"

namespace twinsim {

namespace {

// How many times wider K,V are as SDPA sees them than as the layer computes them: torchtitan's
// repeat_kv gives each query head its own copy of its KV head (MLA's K,V are per head already).
double repeated_kv_factor(const ModelSpec& m, int tp) {
  if (m.mla) return 1;
  return static_cast<double>(heads_per_gpu(m, tp)) / static_cast<double>(kv_heads_per_gpu(m, tp));
}

}  // namespace

TorchCpExchange torch_cp_exchange(const Scenario& s, const LayerOp& ring, const OpTime& attention) {
  TorchCpExchange x;
  const int cp = s.plan.cp;
  if (cp <= 1 || ring.fwd_comm.bytes == 0) return x;
  // one rank's K,V chunk as SDPA takes it (the op list's entry: cp - 1 grouped chunks)
  const double rank_kv = static_cast<double>(ring.fwd_comm.bytes) / (cp - 1) * repeated_kv_factor(s.model, s.plan.tp);
  const GroupLayout group = group_layout(s.cluster, s.plan, ParallelGroup::cp);
  // the all-gather's bytes are the gathered tensor's (nccl-tests' convention): every rank's chunk
  const double gather_s = collective_time_s(s.cluster, CollectiveOp::all_gather, group, cp * rank_kv);
  // dK,dV in fp32 (convert_to_f32): twice a 16-bit chunk's bytes, to one neighbour
  const double grad_bytes =
      rank_kv * 4.0 / static_cast<double>(dtype_bytes(activation_dtype(s.training->precision), 1));
  const double pass_s = collective_time_s(s.cluster, CollectiveOp::send_recv, group, grad_bytes);
  // load-balanced steps do equal work: each 1/cp of the rank's attention
  const double fwd_step = attention.fwd_s / cp, bwd_step = attention.dgrad_s / cp;
  x.fwd_s = gather_s;
  x.fwd_waited_s = std::max(0.0, gather_s - fwd_step);
  // a dK,dV pass after each of the cp steps: the first cp - 1 waited after the next step, the
  // last after the loop
  x.bwd_s = gather_s + cp * pass_s;
  x.bwd_waited_s = std::max(0.0, gather_s - bwd_step) + (cp - 1) * std::max(0.0, pass_s - bwd_step) + pass_s;
  return x;
}

}  // namespace twinsim
