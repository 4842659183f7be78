#include "sim/training/offload_io.hpp"

namespace twinsim {

double offloaded_param_fetch_s(const HostSpec& host, const PlanKnobs& plan, double bytes) {
  if (!plan.offload_params) return 0;
  const double from_drives = plan.offload_device == OffloadDevice::nvme ? bytes / host.nvme_read_Bps : 0.0;
  return from_drives + bytes / host.h2d_Bps;
}

double nvme_optimizer_swap_s(const HostSpec& host, const PlanKnobs& plan, double state_bytes, double grad_bytes,
                             double param_bytes) {
  if (!plan.offload_optimizer || plan.offload_device != OffloadDevice::nvme) return 0;
  const double written = state_bytes + (plan.offload_params ? param_bytes : 0.0);
  return (state_bytes + grad_bytes) / host.nvme_read_Bps + written / host.nvme_write_Bps;
}

}  // namespace twinsim
