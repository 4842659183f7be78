#pragma once
// FSDP2's copies on the compute stream (stack.fsdp_copies), read in PyTorch's
// torch/distributed/_composable/fsdp/_fsdp_collectives.py and _fsdp_param_group.py (2024):
//   - each all-gather's copy-out: wait_for_unshard runs foreach_all_gather_copy_out on the
//     current (compute) stream, split_with_sizes_copy from the gathered buffer into the
//     unsharded parameters: the layer's parameters read and written once;
//   - each reduce-scatter's copy-in: foreach_reduce runs foreach_reduce_scatter_copy_in
//     (torch._chunk_cat of the unsharded gradients into the reduce_dtype input) on the current
//     stream before handing the input to the reduce-scatter stream: the 16-bit gradients read,
//     their reduce_dtype copy (fp32 under torchtitan's mixed_precision_reduce) written.
// The copy-in of a gather (the fp32 shard cast into the all-gather input) runs on the
// all-gather's own stream, beside the compute: not here.
// Under reshard_after_forward (no PP) a micro-batch gathers a layer twice (forward, backward)
// and reduce-scatters it once; under PP as torchtitan runs it (stack.fsdp_pp_keep_gathered)
// once a step each, spread here over the step's micro-batches.
#include "scenario/scenario.hpp"

namespace twinsim {

// A layer's copies for one micro-batch on one GPU, in HBM bytes (read + written).
struct FsdpCopyBytes {
  double fwd = 0;  // the forward gather's copy-out
  double bwd = 0;  // the backward's re-gather copy-out and the reduce-scatter's copy-in
};

// 0 unless the stack runs them (stack.fsdp_copies) on a ZeRO-3 plan with a data-parallel group.
FsdpCopyBytes fsdp_copy_bytes(const Scenario& s, bool moe_layer);

}  // namespace twinsim
