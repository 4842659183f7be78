#include "calibrate/host_path.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "calibrate/samples.hpp"
#include "models/layer_ops.hpp"
#include "models/optimizer_state.hpp"

namespace twinsim::calibrate {

namespace {

// The bytes of one parameter's AdamW update on fp32 gradients, as the memory sweep's adamw
// points count them (models/optimizer_state.hpp).
const double kAdamBytesPerParam = optimizer_update_bytes_per_param(Optimizer::adam, 4);

}  // namespace

void add_host_copy_points(std::vector<MemoryPoint>& out, long n, const SweepOptions& o) {
  const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(float);
  // a source and a destination per set, the sets together twice the L3 (cold_sets)
  const int sets = cold_sets(2 * bytes);
  std::vector<std::vector<float>> from(sets, std::vector<float>(static_cast<std::size_t>(n), 0.5f)),
      to(sets, std::vector<float>(static_cast<std::size_t>(n), 0.0f));
  int i = 0;
  const Stats s = time_per_call(
      [&] {
        i = (i + 1) % sets;
        std::memcpy(to[i].data(), from[i].data(), bytes);
      },
      o.repeats, o.min_repeat_s);
  out.push_back({kHostCopyKernel, 2.0 * static_cast<double>(bytes), s, false});
}

HostPathFit fit_host_path(const std::vector<MemoryPoint>& points) {
  std::vector<double> copy_rates, adam_times;
  for (const MemoryPoint& p : points) {
    if (p.seconds.median <= 0 || p.backward || p.half) continue;
    if (p.kernel == kHostCopyKernel) copy_rates.push_back(0.5 * p.bytes / p.seconds.median);
    if (p.kernel == kernel_names::kAdamw) adam_times.push_back(p.seconds.median / (p.bytes / kAdamBytesPerParam));
  }
  return {median_of(copy_rates), median_of(adam_times)};
}

}  // namespace twinsim::calibrate
