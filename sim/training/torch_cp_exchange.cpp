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

// One rank's K,V chunk as SDPA takes it, in bytes (the op list's entry: cp - 1 grouped chunks)
double repeated_rank_kv_bytes(const Scenario& s, const LayerOp& ring) {
  return static_cast<double>(ring.fwd_comm.bytes) / (s.plan.cp - 1) * repeated_kv_factor(s.model, s.plan.tp);
}

}  // namespace

TorchCpPassBytes torch_cp_pass_bytes(double elements, int cp, bool compiled) {
  if (cp <= 1 || elements <= 0) return {};
  const double a = 2, f = 4;            // bytes of a 16-bit and of an fp32 element
  const double steps = cp - 1;          // the steps after the first, local one
  const double accumulate = 2 * f + a;  // acc (fp32) += a 16-bit block: both read, fp32 written
  const double cast = f + a;            // a dtype conversion: read one, write the other
  TorchCpPassBytes b;
  if (compiled) {
    // the first step's K,V cat (the one the all-gather sends); a fused merge a step
    b.fwd = 4 * a + steps * accumulate;
    // the K,V cat; the first step's blocks cast into dQ, dK, dV; a fused dQ, dK, dV
    // accumulation a step (into the dK,dV cat); the received dK,dV cast back to 16 bits
    b.bwd = 4 * a + 3 * cast + steps * 3 * accumulate + 2 * cast;
  } else {
    // K, V made contiguous and cat each step; the first block upcast; a step's merge: upcast
    // (a + f), out - out_b (3f), sigmoid(...) * that (2f), out - that (3f); the final downcast
    b.fwd = 4 * a * cp + 2 * cast + steps * (a + 9 * f);
    // zeros_like for dQ, dK, dV; K, V contiguous and cat; the first step's +=; a later step on
    // the slowest rank: dK, dV's _partial_update (the half's += and the torch.cat) and dQ's +=;
    // the fp32 dK,dV cat each step; the three casts back to 16 bits
    b.bwd = 3 * f + 4 * a * cp + 3 * accumulate + steps * (2 * (accumulate / 2 + 2 * f) + accumulate) + cp * 4 * f +
            3 * cast;
  }
  b.fwd *= elements;
  b.bwd *= elements;
  return b;
}

TorchRingCalls torch_ring_calls(int cp) {
  if (cp <= 1) return {};
  const double c = cp;
  return {1 / c, (c - 1) / (2 * c)};  // the causal call's rectangle; cp - 1 calls of half of it
}

TorchCpPassBytes torch_cp_pass_bytes(const Scenario& s, const LayerOp& ring) {
  if (s.stack.cp_exchange != kTorchAllGatherCpExchange || s.plan.cp <= 1 || ring.fwd_comm.bytes == 0) return {};
  // K and V are each half of the chunk; Q and the output as wide (heads x head_dim after repeat_kv)
  const double act = static_cast<double>(dtype_bytes(activation_dtype(s.training->precision), 1));
  const double elements = repeated_rank_kv_bytes(s, ring) / (2 * act);
  return torch_cp_pass_bytes(elements, s.plan.cp, torch_ring_compiled(s.stack));
}

bool torch_ring_compiled(const StackSpec& stack) { return !stack.hf_modeling(); }

TorchCpExchange torch_cp_exchange(const Scenario& s, const LayerOp& ring, const OpTime& attention) {
  const int cp = s.plan.cp;
  if (cp <= 1 || ring.fwd_comm.bytes == 0) return {};
  const double rank_kv = repeated_rank_kv_bytes(s, ring);
  const GroupLayout group = group_layout(s.cluster, s.plan, ParallelGroup::cp);
  // the all-gather's bytes are the gathered tensor's (nccl-tests' convention): every rank's chunk
  const double gather_s = collective_time_s(s.cluster, CollectiveOp::all_gather, group, cp * rank_kv);
  // dK,dV in fp32 (convert_to_f32): twice a 16-bit chunk's bytes, to one neighbour
  const double grad_bytes =
      rank_kv * 4.0 / static_cast<double>(dtype_bytes(activation_dtype(s.training->precision), 1));
  const double pass_s = collective_time_s(s.cluster, CollectiveOp::send_recv, group, grad_bytes);
  // load-balanced steps do equal work: each 1/cp of the rank's attention
  return torch_cp_waits(gather_s, pass_s, attention.fwd_s / cp, attention.dgrad_s / cp, cp,
                        torch_ring_compiled(s.stack));
}

TorchCpExchange torch_cp_waits(double gather_s, double pass_s, double fwd_step_s, double bwd_step_s, int cp,
                               bool compiled) {
  TorchCpExchange x;
  x.fwd_s = gather_s;
  x.bwd_s = gather_s + cp * pass_s;  // a dK,dV pass after each of the cp steps
  if (compiled) {                    // each collective waited for as soon as it is issued
    x.fwd_waited_s = x.fwd_s;
    x.bwd_waited_s = x.bwd_s;
    return x;
  }
  // eager: the gather behind the local step; the first cp - 1 passes each waited after the
  // next step, the last after the loop
  x.fwd_waited_s = std::max(0.0, gather_s - fwd_step_s);
  x.bwd_waited_s = std::max(0.0, gather_s - bwd_step_s) + (cp - 1) * std::max(0.0, pass_s - bwd_step_s) + pass_s;
  return x;
}

}  // namespace twinsim
