#pragma once
// The engine limits trtllm-bench 1.0 picks when the benchmark passes no --max_batch_size /
// --max_num_tokens (tensorrt_llm/bench/benchmark/utils/general.py get_settings ->
// bench/build/tuning.py calc_engine_setting + finetune_setting; NVIDIA/TensorRT-LLM, the 1.0-era
// files): the requests of ISL + OSL tokens whose K,V fit `fraction` of the engine's GPUs' memory
// less the weights, rounded up ("slightly optimistic") to a max batch size, and that many
// requests' prompt share of tokens, rounded up, as max_num_tokens. The same max_batch_size
// bounds the CUDA graphs it captures (cuda_graph_config max_batch_size, padding on).
#include <cstdint>

#include "scenario/scenario.hpp"

namespace twinsim {

struct EngineLimits {
  std::int64_t max_batch_size = 0;
  std::int64_t max_num_tokens = 0;
};

// finetune_setting: `kv_max_requests` requests fit the cache; ISL/OSL; pipeline stages.
EngineLimits trtllm_bench_finetune(double kv_max_requests, std::int64_t isl, std::int64_t osl, int pp);

// calc_engine_setting for the scenario's model, plan (the engine's GPUs: tp x dp x pp, attention
// DP counted in trtllm-bench's --tp), GPU memory and dtypes at its workload's prompt and output
// lengths, with the KV share `fraction` (--kv_cache_free_gpu_mem_fraction, default 0.90).
EngineLimits trtllm_bench_limits(const Scenario& scenario, double fraction);

}  // namespace twinsim
