#pragma once
// Which causal prefill attention kernel a serving engine runs on a GPU
// (StackSpec::serving_prefill_attention): the stack's choice where the GPU measures that
// kernel's causal curve; a stack preset's choice falls back to none (every pair at the GPU's
// attention_efficiency) where it does not, while a scenario's own choice is refused there
// (scenario/validate.cpp).
#include <string_view>

#include "hardware/gpu_spec.hpp"
#include "hardware/stack_spec.hpp"

namespace twinsim {

// Whether `gpu` has the causal curves of `kernel` (flash2: its attention_efficiency_by_seq;
// the engines' own prefill calls: prefill_attention_by_heads; the others:
// attention_kernel_efficiency_by_seq).
bool measures_causal_attention(const GpuSpec& gpu, std::string_view kernel);

// The prefill kernel that runs: the stack's serving_prefill_attention where `gpu` measures it
// or the scenario chose it itself; "" (none) where a preset's choice is not measured.
std::string_view prefill_attention_that_runs(const StackSpec& stack, const GpuSpec& gpu);

}  // namespace twinsim
