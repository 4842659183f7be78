#include "hardware/prefill_attention.hpp"

namespace twinsim {

bool measures_causal_attention(const GpuSpec& gpu, std::string_view kernel) {
  if (kernel == kFlash2Attention) return !gpu.attention_efficiency_by_seq.empty();
  return gpu.attention_kernel_efficiency_by_seq.contains(kernel) || gpu.prefill_attention_by_heads.contains(kernel);
}

std::string_view prefill_attention_that_runs(const StackSpec& stack, const GpuSpec& gpu) {
  const std::string& kernel = stack.serving_prefill_attention;
  if (kernel.empty() || !stack.serving_prefill_attention_from_preset || measures_causal_attention(gpu, kernel))
    return kernel;
  return {};  // a preset's kernel the GPU does not measure: the default prefill pricing
}

}  // namespace twinsim
