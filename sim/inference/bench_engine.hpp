#pragma once
// `serve --engine-bench [vllm|sglang|trtllm]`: whose benchmark script's result block the run
// is printed as (vLLM's `vllm bench serve`, bench_report.hpp; SGLang's `python -m
// sglang.bench_serving`, bench_sglang.hpp; TensorRT-LLM's `trtllm-bench throughput`,
// bench_trtllm.hpp). Without a name: the scenario's stack's engine.
#include <optional>
#include <string_view>

#include "hardware/stack_spec.hpp"

namespace twinsim {

enum class BenchEngine { vllm, sglang, trtllm };

std::string_view to_string(BenchEngine e);

// "vllm", "sglang" or "trtllm"; nullopt for anything else.
std::optional<BenchEngine> find_bench_engine(std::string_view name);

// find_bench_engine's, or a ScenarioError naming `flag`.
BenchEngine parse_bench_engine(std::string_view name, std::string_view flag = "--engine-bench");

// The engine a stack preset runs: SGLang for `sglang`, TensorRT-LLM for `trtllm` and
// `trtllm-v1`, vLLM for the others (vllm-v0, vllm-v1, a custom stack, none).
BenchEngine default_bench_engine(const StackSpec& stack);

}  // namespace twinsim
