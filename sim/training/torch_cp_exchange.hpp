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
// That overlap is eager's: a functional collective returns an AsyncCollectiveTensor waited at
// its first use. Traced (torch.compile), _maybe_wrap_tensor calls wait_tensor right after the
// collective ("wait_tensor() op is immediately called", torch/distributed/
// _functional_collectives.py), and Inductor of 2024-12 keeps them together: no comm reordering
// by default (reorder_for_compute_comm_overlap off), and its reorder_for_locality pass moved a
// collective to just before its wait (pytorch/pytorch#150074, 2025-04, stopped that: "increasing
// the locality between a collective and its wait node is generally worse for performance";
// #152252, 2025-04: a compiled all_reduce waited before the independent op after it). So a
// compiled ring (torchtitan-compile: the ring inside each compiled TransformerBlock) waits for
// every gather and dK,dV pass whole.
// Around the per-step SDPA calls the loops run memory-bound passes of their own, counted in
// torch_cp_pass_bytes below.
#include "models/layer_ops.hpp"
#include "scenario/scenario.hpp"
#include "sim/training/layer_costs.hpp"

namespace twinsim {

struct TorchCpExchange {
  double fwd_s = 0, bwd_s = 0;                // the collectives' whole time, each pass
  double fwd_waited_s = 0, bwd_waited_s = 0;  // of which the compute stream waits for
};

// What the compute stream waits for of an exchange whose forward gather takes `gather_s` and
// each backward dK,dV pass `pass_s`, beside load-balanced steps of `fwd_step_s` / `bwd_step_s`
// (1/cp of the attention each), eager or compiled as above; fwd_s and bwd_s the whole exchange.
TorchCpExchange torch_cp_waits(double gather_s, double pass_s, double fwd_step_s, double bwd_step_s, int cp,
                               bool compiled);

// The exchange of one layer's attention on one GPU: `ring` is the op list's CP entry
// (op_names::kAttnCpRing: (cp - 1) chunks of the grouped K,V), `attention` the attention
// core priced (its forward and backward times split over the cp steps).
TorchCpExchange torch_cp_exchange(const Scenario& s, const LayerOp& ring, const OpTime& attention);

// The ring loops' memory passes of one layer on one GPU, in HBM bytes (read + written), counted
// in _templated_ring_attention and its backward (2024-12). N is a rank's K (or V, Q, output)
// elements as SDPA takes them (after repeat_kv), c the CP degree; each step is the slowest
// rank's (the backward's dK,dV pass makes every rank wait for its neighbour each step).
//  Forward, per step after the first, _SDPAMerger.step: the block output upcast to fp32 and
//  merged with the fp32 running output, out - sigmoid(lse_b - lse) * (out - out_b). Each step
//  also concatenates K and V for the rotater (torch.cat, bf16).
//  Backward: fp32 dQ, dK, dV accumulators (zeros_like, +=; _partial_update's chunk add and
//  torch.cat on the load-balanced half steps), the fp32 dK,dV concatenated for the all-to-all
//  each step, the K,V concatenation, and the final casts back to 16 bits.
//  Eager (stack layer kernels hf_*: torchtitan without compile) every aten op is a pass of its
//  own; compiled (torchtitan-compile: each TransformerBlock under torch.compile(fullgraph=True),
//  the ring inside it), Inductor fuses each merge and each accumulation into one kernel writing
//  straight into the concatenation, and drops the K,V concatenations the all-gather rotater
//  never sends (it gathers once, at the first step).
struct TorchCpPassBytes {
  double fwd = 0;  // one forward of the ring (the recompute runs it again)
  double bwd = 0;
};
TorchCpPassBytes torch_cp_pass_bytes(double elements, int cp, bool compiled);

// Whether the stack runs the ring compiled (its layer kernels Inductor's fused ones, not
// Hugging Face's or torchtitan's eager modules): the passes above fused, the exchange waited whole.
bool torch_ring_compiled(const StackSpec& stack);

// The attention core's calls on one rank as PyTorch's load-balanced ring makes them
// (_templated_ring_attention and its backward, 2024-12: _is_causal_behavior and the i <= rank /
// i > rank branches): step 0 a causal call over the rank's own s/cp queries and keys; each of
// the cp - 1 later steps a non-causal one (is_causal=False) against the first half of a peer's
// keys (i <= rank: s/(2 cp) keys a query) or with the second half of the queries (i > rank: s/cp
// keys), as many query-key pairs as the causal call computes, (s/cp)^2 / 2. As shares of the op
// list's full-rectangle FLOPs F (s/cp queries against all s keys): the causal call's rectangle
// is F / cp (a causal curve counts the rectangle it masks), each later call computes F / (2 cp),
// all of it; over the ranks half the later calls take each branch. cp 1: one causal call.
struct TorchRingCalls {
  double causal_share = 1;     // of F, at the causal curve, s/cp keys a query
  double noncausal_share = 0;  // of F, at the non-causal curve: half at s/cp keys, half at s/(2 cp)
};
TorchRingCalls torch_ring_calls(int cp);

// The same for the scenario's layer: 0 unless the stack runs PyTorch's ring (stack.cp_exchange:
// torch_all_gather) on a CP plan. `ring` is the op list's CP entry, as above.
TorchCpPassBytes torch_cp_pass_bytes(const Scenario& s, const LayerOp& ring);

}  // namespace twinsim
