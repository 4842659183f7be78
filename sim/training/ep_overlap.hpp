#pragma once
// Megatron-core's EP all-to-all overlap, "combined 1F1B" (plan.moe_a2a_overlap:
// --overlap-moe-expert-parallel-comm; docs: "Combined 1F1B: Expert-Parallel All-to-All Overlap",
// docs.nvidia.com/megatron-core/developer-guide/nightly/user-guide/features/moe_a2a_overlap.html).
// In the 1F1B steady state the schedule runs one micro-batch's forward and another's backward
// together (megatron/core/pipeline_parallel/combined_1f1b.py), layer by layer
// (megatron/core/models/common/model_chunk_schedule_plan.py, schedule_layer_1f1b): on a
// communication stream the backward's combine, the forward's dispatch, the backward's dispatch
// and the forward's combine all-to-alls; on the compute stream, beside them in turn, the
// forward's attention, the backward's experts, the forward's experts and the backward's
// attention. With --delay-wgrad-compute (plan.delay_wgrad_compute) the experts' weight
// gradients run after their input gradients, beside the backward's dispatch, and the
// attention's after the next layer's combine has started (mlp.dw(), attn.dw()).
// Warm-up forwards and cool-down backwards run alone, their all-to-alls exposed; with virtual
// stages the warm-up has one forward more (schedules.py: num_warmup_microbatches += 1).
#include "hardware/cluster_spec.hpp"
#include "hardware/stack_spec.hpp"
#include "sim/training/layer_costs.hpp"

namespace twinsim {

// Whether the step runs paired passes whose EP all-to-alls go beside the other pass's compute:
// plan.moe_a2a_overlap's combined 1F1B, or DualPipe's forward-and-backward pairs.
inline bool ep_passes_paired(const Plan& plan) { return plan.moe_a2a_overlap || plan.schedule == Schedule::dualpipe; }

// One MoE layer's passes split where the schedule splits them (seconds, one micro-batch):
// `attn`: the compute before the dispatch (attention, router, permute) and after the combine
// (unpermute); `mlp`: the compute between them (the experts); the all-to-alls (and the
// dispatcher's count exchange, the experts' own TP collectives) on the dispatch or combine side
// of the experts.
struct MoeLayerPhases {
  double attn_fwd = 0, mlp_fwd = 0, dispatch_fwd = 0, combine_fwd = 0;
  double attn_dgrad = 0, attn_wgrad = 0, mlp_dgrad = 0, mlp_wgrad = 0, dispatch_bwd = 0, combine_bwd = 0;
  double compute_s() const { return attn_fwd + mlp_fwd + attn_dgrad + attn_wgrad + mlp_dgrad + mlp_wgrad; }
  double comm_s() const { return dispatch_fwd + combine_fwd + dispatch_bwd + combine_bwd; }
};

// The phases of `lc`'s ops, the compute scaled so that each pass sums to the layer's compute
// time (LayerCost::fwd_s / bwd_s: the device's, or the host's where it issues slower).
MoeLayerPhases moe_layer_phases(const LayerCost& lc);

// What running at the same time costs each stream of the pair: the compute runs `compute`
// times slower while an all-to-all runs beside it (the SMs its kernel holds:
// nccl_compute_slowdown), the all-to-all `comm` times slower while compute runs beside it.
struct CorunSlowdowns {
  double compute = 1, comm = 1;
};

// The pair's slowdowns on `cluster`: NCCL's all-to-all, the compute's from the SMs its kernel
// holds (nccl_compute_slowdown), the all-to-all's from published measurements (ep_overlap.cpp);
// where `deepep` (deepep_runs_ep_alltoalls: the flex dispatcher inside a node, where DeepEP's
// kernels are what the all-to-alls are priced as), DeepEP's: the compute's from the 20 SMs its
// kernels hold, its own beside a GEMM (moe_dispatch_deepep.hpp).
CorunSlowdowns ep_corun_slowdowns(const ClusterSpec& cluster, bool deepep);

// The time of `layers` layers run as schedule_layer_1f1b runs them, the forward of layer i
// (phases `f`) beside the backward of layer layers-1-i (phases `b`): two streams, each phase
// starting once its stream is free and its input is ready, each slowed by `slow` while the
// other stream runs.
double combined_1f1b_s(const MoeLayerPhases& f, const MoeLayerPhases& b, int layers, bool delay_wgrad,
                       CorunSlowdowns slow = {});

// Of a paired forward's and backward's all-to-alls, the share the compute stream still waits
// for: (combined time - compute alone) / all-to-all time, in [0, 1]; 0 without all-to-alls.
// At 1 the pair runs no faster than one pass after the other.
double ep_exposed_share(const MoeLayerPhases& phases, int layers, bool delay_wgrad, CorunSlowdowns slow = {});

}  // namespace twinsim
