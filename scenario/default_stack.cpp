#include "scenario/default_stack.hpp"

#include <algorithm>

#include "scenario/load.hpp"

namespace twinsim {

namespace {

// The catalog GPU that is the CPU host's placeholder (hardware/catalog/gpus/host-cpu.yaml).
constexpr const char* kHostGpu = "host-cpu";

bool catalog_gpu_other_than_host(const std::string& gpu_name) {
  if (gpu_name == kHostGpu) return false;
  const std::vector<std::string> names = catalog_gpu_names();
  return std::find(names.begin(), names.end(), gpu_name) != names.end();
}

}  // namespace

std::string default_stack_name(const Scenario& s) {
  if (!catalog_gpu_other_than_host(s.cluster.gpu.name)) return "none";
  return s.is_training() ? "megatron-core" : "vllm-v1";
}

void apply_default_stack(Scenario& s) {
  s.stack = catalog_stack(default_stack_name(s));
  s.stack_is_default = true;
}

}  // namespace twinsim
