#include "sim/training/activation_offload.hpp"

namespace twinsim {

ActivationTransfer activation_transfer(const ClusterSpec& cluster, std::int64_t layer_bytes) {
  const double bytes = static_cast<double>(layer_bytes);
  // pinned host buffers over the GPU's own PCIe link (cluster.host: measured h2d / d2h)
  return {bytes / cluster.host.d2h_Bps, bytes / cluster.host.h2d_Bps};
}

}  // namespace twinsim
