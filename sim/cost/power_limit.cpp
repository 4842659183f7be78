#include "sim/cost/power_limit.hpp"

#include <algorithm>

namespace twinsim {

double power_load(const PowerLimitedGemm& limit, const WorkMix& mix) {
  const double span = mix.tensor_s + mix.memory_s + mix.idle_s;
  if (span <= 0) return 0;
  return (mix.tensor_s + limit.memory_bound_load * mix.memory_s) / span;
}

double sustained_gemm_clock(const GpuSpec& gpu, const WorkMix& mix) {
  if (!gpu.power_limited_gemm) return 1;
  const PowerLimitedGemm& limit = *gpu.power_limited_gemm;
  // clock = 1 - slope * max(0, load - knee_load): the fit of the duty-cycle sweep
  return 1 - limit.slope * std::max(0.0, power_load(limit, mix) - limit.knee_load);
}

}  // namespace twinsim
