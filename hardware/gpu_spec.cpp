#include "hardware/gpu_spec.hpp"

#include <stdexcept>

#include "hardware/curve.hpp"

namespace twinsim {

double GpuSpec::peak(Dtype d) const {
  auto it = peak_flops.find(d);
  if (it == peak_flops.end())
    throw std::invalid_argument("GPU " + name + " has no " + std::string(to_string(d)) +
                                " math units");
  return it->second;
}

double GpuSpec::kernel_memory_efficiency(std::string_view kernel, bool backward, double bytes, Dtype data) const {
  if (data == Dtype::bf16 || data == Dtype::fp16)
    if (const auto it = kernel_efficiency_16bit.find(kernel); it != kernel_efficiency_16bit.end() && !it->second.empty())
      return interpolate_efficiency(it->second.of(backward), bytes);
  const auto it = kernel_efficiency.find(kernel);
  if (it == kernel_efficiency.end() || it->second.empty()) return memory_efficiency;
  return interpolate_efficiency(it->second.of(backward), bytes);
}

bool beyond_measured(const std::vector<EfficiencyPoint>& curve, double size) {
  return curve.size() >= 2 && (size < curve.front().size || size > curve.back().size);
}

double interpolate_efficiency(const std::vector<EfficiencyPoint>& curve, double size) {
  if (curve.empty()) return 1.0;
  return interpolate_log_x<EfficiencyPoint, &EfficiencyPoint::size, &EfficiencyPoint::efficiency>(curve, size);
}

}  // namespace twinsim
