#include "sim/training/ep_overlap.hpp"

#include <algorithm>
#include <string_view>

#include "models/op_names.hpp"

namespace twinsim {

namespace {

// The collectives on the experts' input side (the count exchange, the dispatch, the experts' TP
// gather); the others of the layer's EP category (the TP scatter, the combine) follow the experts.
bool dispatch_side(std::string_view name) {
  return name == op_names::kMoeCounts || name == op_names::kMoeDispatch || name == op_names::kMoeEtpGather;
}

// Each pass's compute phases scaled by `scale` (the layer's pass time over its ops' sum).
void scale_compute(MoeLayerPhases& p, double fwd_scale, double bwd_scale) {
  p.attn_fwd *= fwd_scale;
  p.mlp_fwd *= fwd_scale;
  for (double* d : {&p.attn_dgrad, &p.attn_wgrad, &p.mlp_dgrad, &p.mlp_wgrad}) *d *= bwd_scale;
}

}  // namespace

MoeLayerPhases moe_layer_phases(const LayerCost& lc) {
  MoeLayerPhases p;
  std::size_t last_dispatch = 0, first_combine = lc.ops.size();
  for (std::size_t i = 0; i < lc.ops.size(); ++i) {
    if (lc.ops[i].category != TimeCategory::ep_comm) continue;
    if (dispatch_side(lc.ops[i].name)) last_dispatch = i;
    else first_combine = std::min(first_combine, i);
  }
  double fwd = 0, bwd = 0;
  for (std::size_t i = 0; i < lc.ops.size(); ++i) {
    const OpTime& op = lc.ops[i];
    if (op.category == TimeCategory::ep_comm) {
      const bool before = dispatch_side(op.name);
      (before ? p.dispatch_fwd : p.combine_fwd) += op.fwd_s;
      (before ? p.dispatch_bwd : p.combine_bwd) += op.dgrad_s;
      continue;
    }
    if (op.category != TimeCategory::compute) continue;  // TP and CP collectives: the passes' own
    const bool experts = i > last_dispatch && i < first_combine;
    (experts ? p.mlp_fwd : p.attn_fwd) += op.fwd_s;
    (experts ? p.mlp_dgrad : p.attn_dgrad) += op.dgrad_s;
    (experts ? p.mlp_wgrad : p.attn_wgrad) += op.wgrad_s;
    fwd += op.fwd_s;
    bwd += op.dgrad_s + op.wgrad_s;
  }
  scale_compute(p, fwd > 0 ? lc.fwd_s(TimeCategory::compute) / fwd : 0,
                bwd > 0 ? lc.bwd_s(TimeCategory::compute) / bwd : 0);
  return p;
}

double combined_1f1b_s(const MoeLayerPhases& f, const MoeLayerPhases& b, int layers, bool delay_wgrad) {
  // without the delay each backward runs its weight gradients with its input gradients
  const double mlp_bwd = b.mlp_dgrad + (delay_wgrad ? 0 : b.mlp_wgrad);
  const double attn_bwd = b.attn_dgrad + (delay_wgrad ? 0 : b.attn_wgrad);
  const double mlp_dw = delay_wgrad ? b.mlp_wgrad : 0, attn_dw = delay_wgrad ? b.attn_wgrad : 0;
  double compute = 0, comm = 0;  // when each stream is free: the previous backward attention's end, forward combine's
  double pending_dw = 0;         // the previous layer's attention weight gradients, run first on the compute stream
  for (int i = 0; i < layers; ++i) {
    // the backward's combine needs the gradient the layer above it handed down (compute)
    const double combine_b = std::max(comm, compute) + b.combine_bwd;
    // the forward's attention needs the previous layer's combined output (comm)
    const double attn_f = std::max(compute + pending_dw, comm) + f.attn_fwd;
    const double dispatch_f = std::max(combine_b, attn_f) + f.dispatch_fwd;
    const double mlp_b = std::max(attn_f, combine_b) + mlp_bwd;
    const double dispatch_b = std::max(dispatch_f, mlp_b) + b.dispatch_bwd;
    const double mlp_f = std::max(mlp_b + mlp_dw, dispatch_f) + f.mlp_fwd;
    const double combine_f = std::max(dispatch_b, mlp_f) + f.combine_fwd;
    const double attn_b = std::max(mlp_f, dispatch_b) + attn_bwd;
    compute = attn_b, comm = combine_f, pending_dw = attn_dw;
  }
  return std::max(compute + pending_dw, comm);
}

double ep_exposed_share(const MoeLayerPhases& phases, int layers, bool delay_wgrad) {
  const double comm = phases.comm_s() * layers;
  if (comm <= 0 || layers <= 0) return 0;
  const double exposed = combined_1f1b_s(phases, phases, layers, delay_wgrad) - phases.compute_s() * layers;
  return std::clamp(exposed / comm, 0.0, 1.0);  // the combined time is at most compute + comm
}

}  // namespace twinsim
