// The goodput tests' scenario: Llama-3-8B on 64 H100s (TP 8, DP 8), bf16, one 8K step.
#pragma once

namespace twinsim::test {

inline constexpr const char* kLlama8b = R"(
model: llama3-8b
cluster: dgx-h100
training: {seq_len: 8192, global_batch: 64, precision: bf16}
plan: {tp: 8, pp: 1, dp: 8}
)";

}  // namespace twinsim::test
