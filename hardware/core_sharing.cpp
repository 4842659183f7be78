#include "hardware/core_sharing.hpp"

namespace twinsim {

void apply_core_sharing(ClusterSpec& c, std::int64_t ranks_per_node) {
  const CoreSharingSpec& s = c.core_sharing;
  if (s.busy_ranks < 2 || ranks_per_node != 1) return;
  // the curves are fractions of these: every GEMM, attention and memory-bound kernel
  // speeds up alike, as the medians of its kind did in the measurement
  for (auto& [dtype, flops] : c.gpu.peak_flops) flops *= s.alone_gemm_speedup;
  c.gpu.hbm_bandwidth_Bps *= s.alone_memory_speedup;
}

}  // namespace twinsim
