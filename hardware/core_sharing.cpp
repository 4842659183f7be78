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

void apply_cache_sharing(ClusterSpec& c, std::int64_t ranks_per_node) {
  if (ranks_per_node == 1 && !c.gpu.gemm_reuse_time_alone.empty()) {
    c.gpu.gemm_reuse_time = c.gpu.gemm_reuse_time_alone;  // measured as this plan runs: alone
    return;
  }
  if (c.gpu.gemm_reuse_ranks <= 0 || ranks_per_node <= 0) return;  // not recorded: as measured
  // the plan's sets in the cache against the measurement's (apply_cache_sharing's comment)
  c.gpu.gemm_reuse_set_scale = static_cast<double>(ranks_per_node) / c.gpu.gemm_reuse_ranks;
}

}  // namespace twinsim
