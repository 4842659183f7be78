#pragma once
// One static batch of requests run for real (SCENARIO.md `inference`): `batch` synthetic
// prompts of `prompt_len` tokens prefilled together, then `output_len - 1` greedy decode
// steps, every rank holding its TP shard of the whole model and of the KV cache.
//   TTFT = prefill until the first tokens are known; TPOT = median decode step (of every
//   round: InferenceConfig::decode_rounds); output tokens/s = batch * output_len / (TTFT +
//   the first round's decode steps).
// Op times are kept per phase too (prefill, decode), under the simulator's names: the
// training ones with pass "fwd", plus "head.sample.fwd" for the greedy sampling.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "exec/runtime/data.hpp"
#include "exec/runtime/process_groups.hpp"
#include "exec/runtime/profiler.hpp"
#include "exec/runtime/allocator.hpp"
#include "hardware/gpu_spec.hpp"
#include "models/model_spec.hpp"
#include "models/plan.hpp"
#include "models/workload.hpp"

namespace twinsim::exec {

struct InferenceConfig {
  ModelSpec model;
  Plan plan;
  InferenceWorkload workload;
  std::uint64_t seed = 1234;
  // The decode is run this many times from the same prefill, the cache rewound to the prompt
  // each time; TPOT is the median of every pass. A run's 31 passes of a few tenths of a ms
  // fall inside one of the L3's slow or fast spells (waves of ~20 passes on a 2-vCPU EPYC,
  // issue 61), so three runs' medians spread 50-250%; more passes cost no setup.
  int decode_rounds = 1;
};

// Throws a ScenarioError (key, value, rule) for what the executor does not serve (pp or cp
// above 1, ep without experts or not dividing dp, weights other than fp32/bf16/fp16, ...).
void validate(const InferenceConfig& c);

struct InferenceRecord {
  double ttft_s = 0;              // slowest rank
  std::vector<double> decode_s;   // each decode step of every round, slowest rank
  double request_s = 0;           // TTFT + the first round's decode steps: the request's time
  std::vector<int> first_tokens;  // the first sequence's generated tokens
  std::int64_t kv_cache_bytes = 0;  // the cache over all TP ranks
  nlohmann::json params_and_memory;   // rank 0: measured_params_and_memory (run_report.hpp)
  // this rank's profiled ops of the prefill pass and of all decode passes
  std::map<std::string, OpTotal, std::less<>> prefill_ops, decode_ops;
};

// Collective: every rank of the job calls it with the same config.
InferenceRecord run_inference(const InferenceConfig& c, ProcessGroups& groups, const TokenSource& prompts,
                              Profiler* profiler, Allocator& allocator, const GpuSpec& gpu);

// Collective; rank 0 gets measured.json for an inference scenario, the others null.
// Besides SCENARIO.md's keys, `inference.prefill` and `inference.decode` carry "passes"
// (1 and output_len - 1) and "ops": {"layer3.attn.qkv.fwd": {count_per_pass,
// mean_s_per_pass, max_s_per_pass}}, averaged over the ranks that ran the op (max: the
// slowest rank), per pass (decode: all decode passes' time over their number).
nlohmann::json measured_inference_report(const InferenceConfig& c, ProcessGroups& groups, const InferenceRecord& r,
                                         const Profiler& profiler);

}  // namespace twinsim::exec
