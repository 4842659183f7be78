#include "sim/cost/power_limit.hpp"

#include <algorithm>
#include <cmath>

namespace twinsim {

double power_load(const PowerLimitedGemm& limit, const WorkMix& mix) {
  const double span = mix.tensor_s + mix.memory_s + mix.idle_s;
  if (span <= 0) return 0;
  return (mix.tensor_s + limit.memory_bound_load * mix.memory_s) / span;
}

double draw_clock_exponent(const PowerLimitedGemm& fit) {
  const double full_load_clock = 1 - fit.slope * (1 - fit.knee_load);
  if (fit.knee_load <= 0 || fit.knee_load >= 1 || full_load_clock >= 1 || full_load_clock <= 0) return 0;
  // knee = c1^beta: the draw at full load and clock c1 equals the draw at the knee's load cool
  return std::log(fit.knee_load) / std::log(full_load_clock);
}

double power_bound_rate_ratio(double beta, double measured_W, int measured_sms, double limit_W, int sms) {
  if (beta <= 0 || measured_W <= 0 || limit_W <= 0 || measured_sms <= 0 || sms <= 0) return 1;
  const double sm_ratio = static_cast<double>(sms) / measured_sms;
  // draw = sms x clock^beta at the limit: the clock follows the limit per SM
  const double clock = std::pow(limit_W / measured_W / sm_ratio, 1 / beta);
  return clock * sm_ratio;
}

PowerLimitedGemm clock_figures_at(const PowerLimitedGemm& measured, double power_limit_W) {
  if (power_limit_W <= 0 || measured.measured_at_W <= 0 || power_limit_W == measured.measured_at_W) return measured;
  const double beta = draw_clock_exponent(measured);
  if (beta <= 0) return measured;
  PowerLimitedGemm at = measured;
  at.measured_at_W = power_limit_W;
  at.knee_load = measured.knee_load * power_limit_W / measured.measured_at_W;
  if (at.knee_load >= 1) {  // a raised limit the GEMMs never reach
    at.knee_load = 1, at.slope = 0;
    return at;
  }
  at.slope = (1 - std::pow(at.knee_load, 1 / beta)) / (1 - at.knee_load);
  return at;
}

double sustained_attention_clock(const GpuSpec& gpu) {
  if (!gpu.power_limited_gemm || gpu.power_limit_W <= 0) return 1;
  const PowerLimitedGemm& measured = *gpu.power_limited_gemm;
  const double beta = draw_clock_exponent(measured);
  if (beta <= 0 || gpu.power_limit_W >= measured.measured_at_W) return 1;
  // draw = clock^beta at the limit, the kernel alone: the clock follows the limit
  return std::pow(gpu.power_limit_W / measured.measured_at_W, 1 / beta);
}

double sustained_gemm_clock(const GpuSpec& gpu, const WorkMix& mix) {
  if (!gpu.power_limited_gemm) return 1;
  const PowerLimitedGemm limit = clock_figures_at(*gpu.power_limited_gemm, gpu.power_limit_W);
  // clock = 1 - slope * max(0, load - knee_load): the fit of the duty-cycle sweep
  return 1 - limit.slope * std::max(0.0, power_load(limit, mix) - limit.knee_load);
}

}  // namespace twinsim
