#pragma once
// Activation offload (plan.offload_activations_layers; Transformer Engine's CPU offload as
// Megatron-core runs it, get_cpu_offload_context with activations only): each of the first N
// layers' saved activations crosses the GPU's PCIe link to CPU memory after the layer's
// forward, beside the next layer's forward (the layer after that waits for the copy: TE's
// group commit synchronises the offload stream), and comes back one layer ahead in the
// backward (the reload starts with the next layer's backward; the layer's own backward waits
// for it). Copies run on the copy engines, so they take nothing from the compute beside them.
// The event engine builds them as tasks on the GPU's host-link stream; the search's estimate
// takes their excess over the passes they hide behind. One home for both.
#include <algorithm>
#include <cstdint>

#include "hardware/cluster_spec.hpp"

namespace twinsim {

struct ActivationTransfer {
  double offload_s = 0;  // GPU -> CPU, one layer
  double reload_s = 0;   // CPU -> GPU, one layer
};
ActivationTransfer activation_transfer(const ClusterSpec& cluster, std::int64_t layer_bytes);

// One micro-batch's wait for `transfers` transfers of `transfer_s` each, one after the other
// on one stream, each beside a pass of `pass_s`: every period takes the longer of the two.
inline double transfer_stall_s(double transfer_s, double pass_s, std::int64_t transfers) {
  return transfers > 0 && transfer_s > pass_s ? static_cast<double>(transfers) * (transfer_s - pass_s) : 0.0;
}

// How many of the N offloads a forward waits for: offload i is waited for by layer i + 2,
// which exists for i <= layers - 3; the last ones have the rest of the forward and the
// backward of the later layers to finish.
inline std::int64_t forward_waits(std::int64_t offloaded, std::int64_t layers) {
  return std::max<std::int64_t>(0, std::min(offloaded, layers - 2));
}

// With N = layers - 1 nothing in the forward waits for the last offload (layer layers - 2's):
// its copy runs beside the last layer's forward and the head, and its reload, which the
// layer's own backward waits for, follows it on the same stream. The wait this adds to the
// backward beyond transfer_stall_s's count for that reload; `between_s`: the last layer's
// forward and the head's passes, `bwd_s`: the last layer's backward.
inline double unwaited_offload_stall_s(const ActivationTransfer& x, double between_s, double bwd_s) {
  const double reloaded = std::max(between_s, x.offload_s) + x.reload_s;  // from the last layer's forward
  return std::max(0.0, reloaded - (between_s + bwd_s)) - std::max(0.0, x.reload_s - bwd_s);
}

}  // namespace twinsim
