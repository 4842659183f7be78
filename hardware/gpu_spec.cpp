#include "hardware/gpu_spec.hpp"

#include <cmath>
#include <stdexcept>

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
  if (size <= curve.front().size) return curve.front().efficiency;
  if (size >= curve.back().size) return curve.back().efficiency;
  for (std::size_t i = 1; i < curve.size(); ++i) {
    if (size <= curve[i].size) {
      const EfficiencyPoint& a = curve[i - 1];
      const EfficiencyPoint& b = curve[i];
      const double t = (std::log(size) - std::log(a.size)) / (std::log(b.size) - std::log(a.size));
      return a.efficiency + t * (b.efficiency - a.efficiency);
    }
  }
  return curve.back().efficiency;
}

}  // namespace twinsim
