#pragma once
// Context parallelism's K,V exchange as PyTorch's ring attention runs it
// (torch/distributed/tensor/experimental/_attention.py, 2024-12: _templated_ring_attention and
// its backward; stack.cp_exchange: torch_all_gather), not the ideal ring:
//  * the K and V it exchanges are those SDPA is called with: torchtitan repeats each KV head
//    for its query heads before the call (repeat_kv, torchtitan/models/llama/model.py), so
//    a rank's K,V are heads x head_dim wide, not kv_heads x head_dim;
//  * the forward's rotater is _AllGatherRotater (_cp_options.rotate_method's default,
//    ALL_GATHER): one all-gather of every rank's K,V, issued before the local step and waited
//    for at the second: it hides behind the local step only. With load balancing (on by
//    default) every step does the same work, 1/cp of the rank's attention;
//  * the backward gathers K,V again the same way and passes the fp32 dK,dV accumulators
//    (convert_to_f32) to the next rank after each step with an all-to-all (_AllToAllRotater):
//    each is waited for after the next step, the last one after the loop.
// The merges of the partial outputs (fp32) are not priced here.
#include "models/layer_ops.hpp"
#include "scenario/scenario.hpp"
#include "sim/training/layer_costs.hpp"

namespace twinsim {

struct TorchCpExchange {
  double fwd_s = 0, bwd_s = 0;                // the collectives' whole time, each pass
  double fwd_waited_s = 0, bwd_waited_s = 0;  // of which the compute stream waits for
};

// The exchange of one layer's attention on one GPU: `ring` is the op list's CP entry
// (op_names::kAttnCpRing: (cp - 1) chunks of the grouped K,V), `attention` the attention
// core priced (its forward and backward times split over the cp steps).
TorchCpExchange torch_cp_exchange(const Scenario& s, const LayerOp& ring, const OpTime& attention);

}  // namespace twinsim
