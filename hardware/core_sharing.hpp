#pragma once
// A plan's ranks on a CPU host that share its cores (ClusterSpec::core_sharing): once the
// plan is known, a plan that runs one rank on each machine gets the figures of a rank
// alone, the GPU's peaks and bandwidth scaled by the measured speedups; a plan that keeps
// as many cores busy as the calibration did keeps the calibrated figures.
#include <cstdint>

#include "hardware/cluster_spec.hpp"

namespace twinsim {

// `ranks_per_node`: the plan's ranks that run at once on one machine. Scales c.gpu's
// peak_flops (every math type) by alone_gemm_speedup and hbm_bandwidth_Bps by
// alone_memory_speedup when the node is described (busy_ranks >= 2) and the plan runs one
// rank on it; leaves it as calibrated otherwise (between the two, on machines of more
// than two cores, nothing is measured: the calibrated figures stand).
void apply_core_sharing(ClusterSpec& c, std::int64_t ranks_per_node);

// The last-level cache the same ranks share: where the file records the processes that
// shared it while the reuse curve was measured (GpuSpec::gemm_reuse_ranks), sets
// c.gpu.gemm_reuse_set_scale to ranks_per_node over them. Each of R measuring processes
// re-used its own set W, so the curve's point W is the cache holding R x W; a plan of r ranks
// with working set W' each holds r x W', the curve's point at W' x r / R (issue 61: tiny-gpt's
// one decode rank alone on a 2-core host ran at the curve with its bytes doubled).
// A plan of one rank a machine, where the file has the curve measured alone
// (GpuSpec::gemm_reuse_time_alone), reads that one instead, at its own working set.
void apply_cache_sharing(ClusterSpec& c, std::int64_t ranks_per_node);

}  // namespace twinsim
