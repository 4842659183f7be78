#include "sim/training/ep_overlap.hpp"

#include <algorithm>
#include <array>
#include <limits>
#include <string_view>
#include <vector>

#include "models/op_names.hpp"
#include "sim/cost/collective_cost.hpp"
#include "sim/cost/moe_dispatch_deepep.hpp"

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

namespace {

// A phase on one of the pair's streams: its work at full speed, and the phase of the other
// stream it needs done first (its index there; -1 for none).
struct StreamPhase {
  double work = 0;
  int needs = -1;
};

// The phases of `layers` layers in schedule_layer_1f1b's order (index 0 compute, 1 comm).
std::array<std::vector<StreamPhase>, 2> pair_phases(const MoeLayerPhases& f, const MoeLayerPhases& b, int layers,
                                                    bool delay_wgrad) {
  // without the delay each backward runs its weight gradients with its input gradients
  const double mlp_bwd = b.mlp_dgrad + (delay_wgrad ? 0 : b.mlp_wgrad);
  const double attn_bwd = b.attn_dgrad + (delay_wgrad ? 0 : b.attn_wgrad);
  std::array<std::vector<StreamPhase>, 2> s;
  auto& [compute, comm] = s;
  auto next = [](const std::vector<StreamPhase>& v) { return static_cast<int>(v.size()); };
  for (int i = 0; i < layers; ++i) {
    const int prev_attn_b = next(compute) - (delay_wgrad && i > 0 ? 2 : 1);  // before its attention wgrad
    comm.push_back({b.combine_bwd, i > 0 ? prev_attn_b : -1});               // needs the gradient from above
    compute.push_back({f.attn_fwd, i > 0 ? next(comm) - 2 : -1});            // the previous layer's F.combine
    comm.push_back({f.dispatch_fwd, next(compute) - 1});
    compute.push_back({mlp_bwd, next(comm) - 2});  // after B.combine
    comm.push_back({b.dispatch_bwd, next(compute) - 1});
    if (delay_wgrad) compute.push_back({b.mlp_wgrad, -1});  // mlp.dw(), beside B.dispatch
    compute.push_back({f.mlp_fwd, next(comm) - 2});         // after F.dispatch
    comm.push_back({f.combine_fwd, next(compute) - 1});
    compute.push_back({attn_bwd, next(comm) - 2});           // after B.dispatch
    if (delay_wgrad) compute.push_back({b.attn_wgrad, -1});  // attn.dw(), before the next F.attn
  }
  return s;
}

}  // namespace

// How many times slower NCCL's send/recv (an all-to-all's parts) run beside a GEMM than alone:
// 2, "up to 2x in communication compared to comm-only" beside a 128-block CUTLASS GEMM on a
// 142-SM GPU, memory bandwidth contention per NCCL's maintainer (NVIDIA/nccl issue #1433, 2024).
// Held out: a V100 all-reduce beside a CUTLASS GEMM, 106.6 -> 206.4, 174.8 -> 381.5 and
// 301.1 -> 681.3 ms (1.94, 2.18, 2.26x; parasailteam/coconet issue #6, NCCL 24 channels).
constexpr double kNcclSlowdownBesideGemm = 2.0;

CorunSlowdowns ep_corun_slowdowns(const ClusterSpec& cluster, bool deepep) {
  if (deepep) return {deepep_compute_slowdown(cluster.gpu), deepep_slowdown_beside_gemm()};
  return {nccl_compute_slowdown(cluster), kNcclSlowdownBesideGemm};
}

double combined_1f1b_s(const MoeLayerPhases& f, const MoeLayerPhases& b, int layers, bool delay_wgrad,
                       CorunSlowdowns slow) {
  const auto phases = pair_phases(f, b, layers, delay_wgrad);
  const std::array<double, 2> slowdown{slow.compute, slow.comm};
  std::array<std::size_t, 2> done{0, 0};  // phases finished on each stream
  std::array<double, 2> left{-1, -1};     // the running phase's work left; -1 for none
  double now = 0;
  for (;;) {
    bool started = false;
    for (int k = 0; k < 2; ++k) {  // start each idle stream's next phase once its input is done
      if (left[k] >= 0 || done[k] == phases[k].size()) continue;
      const StreamPhase& p = phases[k][done[k]];
      if (p.needs >= 0 && done[1 - k] <= static_cast<std::size_t>(p.needs)) continue;
      if (p.work <= 0) ++done[k], started = true;
      else left[k] = p.work;
    }
    if (started) continue;
    if (left[0] < 0 && left[1] < 0) break;  // both streams done (their inputs never block both)
    const bool both = left[0] >= 0 && left[1] >= 0;
    std::array<double, 2> rate{};  // work done per second: slowed while the other stream runs too
    double step = std::numeric_limits<double>::infinity();
    for (int k = 0; k < 2; ++k) {
      if (left[k] < 0) continue;
      rate[k] = both ? 1.0 / slowdown[k] : 1.0;
      step = std::min(step, left[k] / rate[k]);
    }
    now += step;
    for (int k = 0; k < 2; ++k) {
      if (left[k] < 0) continue;
      left[k] -= step * rate[k];
      if (left[k] <= 1e-12 * std::max(1.0, phases[k][done[k]].work)) left[k] = -1, ++done[k];
    }
  }
  return now;
}

double ep_exposed_share(const MoeLayerPhases& phases, int layers, bool delay_wgrad, CorunSlowdowns slow) {
  const double comm = phases.comm_s() * layers;
  if (comm <= 0 || layers <= 0) return 0;
  const double exposed = combined_1f1b_s(phases, phases, layers, delay_wgrad, slow) - phases.compute_s() * layers;
  return std::clamp(exposed / comm, 0.0, 1.0);  // above 1: slower than the passes one after another
}

}  // namespace twinsim
