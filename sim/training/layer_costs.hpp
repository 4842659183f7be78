#pragma once
// The time of every op of one layer for one micro-batch on one GPU: the layer's op list
// (models/layer_ops) priced by the compute and collective cost models. All layers of the
// same kind (dense or MoE) cost the same, so each kind is priced once per step.
#include <string>
#include <vector>

#include "hardware/stack_spec.hpp"
#include "models/layer_ops.hpp"
#include "scenario/scenario.hpp"

namespace twinsim {

// Where an op's time is charged in the step breakdown.
enum class TimeCategory { compute, recompute, tp_comm, cp_comm, ep_comm };

struct OpTime {
  std::string name;  // "attn.qkv": the step prefixes "layer<N>." and appends ".fwd" etc.
  TimeCategory category = TimeCategory::compute;
  double fwd_s = 0;
  double dgrad_s = 0;  // backward w.r.t. inputs (collectives: the backward collective)
  double wgrad_s = 0;  // backward w.r.t. weights
  // a TP entry's re-gather of its input (LayerOp::bwd_regather), whole, and the part of it
  // dgrad_s holds: what the GEMM's dgrad does not hide (hide_regathers, async_tp.hpp)
  double regather_s = 0, regather_exposed_s = 0;
  bool recomputed = false;
  double recompute_share = 1;  // LayerOp::recompute_share
  double fwd_flops = 0, bwd_flops = 0;
  double fwd_bytes = 0, bwd_bytes = 0;  // HBM traffic (compute ops)
  double dgrad_bytes = 0, wgrad_bytes = 0;  // bwd_bytes by backward pass
  int fwd_launches = 0, dgrad_launches = 0, wgrad_launches = 0;  // kernels per pass (compute ops)
  // The host's time to issue the op's forward and its backward (the stack's host_op_s a
  // compute row, or its calls' (stack.moe_host_calls)), and whether the forward's host waits
  // for the device before issuing it (a device-to-host sync: the pass splits there)
  double fwd_host_s = 0, bwd_host_s = 0;
  bool host_waits_before_fwd = false;
  // of the passes' time, the tensor cores' (GEMMs' and attention's math): the power limit's
  // load. Attention's curves were measured in loops of attention alone, at the limit already
  // (its rate 0.86-1.0 of a cool GPU's on an H100): its time counts, its clock is its curve's.
  double tensor_s = 0;
  bool extrapolated = false;  // a pass was priced beyond the measured figures (curve or group size)
};

struct LayerCost {
  std::vector<OpTime> ops;  // forward order
  StackSpec stack;          // the software that issues them (the scenario's stack)
  // the GEMMs' clock under the GPU's power limit, against their curves' (sim/cost/power_limit.hpp),
  // set by the mix of these ops' passes; the GEMM times above include it
  double gemm_clock = 1;
  // Of the TP collectives' time (tp_comm), what the compute stream waits for when they overlap
  // it (plan.tp_comm_overlap): 0 where they hide behind the whole pass (stack.tp_overlap:
  // layer), the excess over the matmul each is fused with under PyTorch's async TP (matmul:
  // sim/training/async_tp.hpp). The rest runs beside the compute.
  double tp_waited_fwd_s = 0, tp_waited_bwd_s = 0;
  // ... and of the TP collectives the recompute runs again (recompute_comm_s), what it waits for
  double tp_waited_recompute_s = 0;
  // Of the CP exchange's time (cp_comm), what the compute stream waits for: 0 where it hides
  // behind the whole attention (stack.cp_exchange: ring); under PyTorch's ring attention what
  // the local step does not hide (sim/training/torch_cp_exchange.hpp). The rest runs beside.
  double cp_waited_fwd_s = 0, cp_waited_bwd_s = 0;
  // Time per category. Compute is the ops' device time, or longer where the host takes
  // longer to issue the pass than the device takes to run it (issued_compute_s): an eager
  // stack's small layers are host-bound.
  double fwd_s(TimeCategory c) const;
  double bwd_s(TimeCategory c) const;
  double recompute_s() const;  // forward of the ops the recompute policy runs again
  // the collectives of category `c` the recompute runs again (full recompute: all the forward's;
  // PyTorch's op-level checkpointing: TP's all-gathers, models/layer_ops.cpp)
  double recompute_comm_s(TimeCategory c) const;
  double fwd_flops() const;
  double bwd_flops() const;
  double recompute_flops() const;
  double fwd_bytes() const;
  double bwd_bytes() const;
};

// Prices transformer layer `layer` under the scenario's plan and training workload.
// The fused attention kernel the stack runs on this GPU: SDPA's and Transformer Engine's pick
// (sdpa, te) is cuDNN's where the catalog entry measures it, else FlashAttention-2; any other
// is the stack's own (validation refused a kernel the GPU lacks).
std::string_view resolved_attention_kernel(const StackSpec& stack, const GpuSpec& gpu);

LayerCost cost_layer(const Scenario& s, std::int64_t layer);

// The ops outside the transformer layers: embedding on the first stage, final norm,
// logits and loss on the last.
LayerCost cost_embedding(const Scenario& s);

// Whether DeepEP's kernels run the MoE token all-to-alls: the stack's flex dispatcher
// (stack.moe_dispatcher: deepep) with the EP group inside one node; across nodes NCCL's
// all-to-all prices them (DeepEP's internode kernels are not modelled).
bool deepep_runs_ep_alltoalls(const Scenario& s);
LayerCost cost_head(const Scenario& s);

}  // namespace twinsim
