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

// ZeRO-2/3, ZeRO-Offload, ZeRO-Infinity and ZeRO++ are DeepSpeed's (Megatron-Core's
// distributed optimizer is ZeRO-1).
bool deepspeed_plan(const Plan& plan) {
  return plan.zero >= 2 || plan.offload_optimizer || plan.offload_params || plan.zero_quantized_weights ||
         plan.zero_quantized_gradients || plan.zero_hpz_partition_size > 1;
}

}  // namespace

std::string default_stack_name(const Scenario& s) {
  if (!catalog_gpu_other_than_host(s.cluster.gpu.name)) return "none";
  if (!s.is_training()) return "vllm-v1";
  return deepspeed_plan(s.plan) ? "deepspeed" : "megatron-core";
}

void apply_default_stack(Scenario& s) {
  s.stack = catalog_stack(default_stack_name(s));
  s.stack_is_default = true;
}

}  // namespace twinsim
