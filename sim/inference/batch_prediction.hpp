#pragma once
// `twinsim simulate` on an inference scenario: one static batch of `batch` requests of
// prompt_len + output_len tokens on each model replica (the `inference` object of
// SCENARIO.md). The batch is prefilled in one pass, then decoded one token per sequence
// per pass; each pass crosses all pipeline stages in turn (a latency view: for
// pipelined serving throughput, `twinsim serve` keeps pp batches in flight).
#include <cstdint>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "scenario/scenario.hpp"
#include "sim/inference/iteration_cost.hpp"
#include "sim/inference/kv_cache.hpp"

namespace twinsim {

struct InferencePrediction {
  double ttft_s = 0;               // the prefill pass (first token of every sequence)
  double tpot_s = 0;               // mean decode pass over the output_len - 1 later tokens
  double e2e_s = 0;                // ttft + all decode passes
  double output_tokens_per_s = 0;  // all replicas: dp x batch x output_len / e2e
  double requests_per_s = 0;       // all replicas
  std::int64_t kv_cache_bytes_per_token = 0;          // the whole model, all layers and KV heads
  std::int64_t kv_cache_bytes_per_token_per_gpu = 0;  // of the stage with the most layers, after TP
  std::int64_t max_batch = 0;      // sequences of prompt_len + output_len the paged cache holds
  KvCapacity kv;
  IterationCost prefill;           // the prefill pass
  IterationCost first_decode;      // the first decode pass (context prompt_len + 1), with a draft's passes
  double decode_weight_bytes_per_step = 0;  // one GPU per stage, summed over stages
  bool weights_offloaded = false;  // plan.offload_params (ZeRO-Inference): the passes stream their weights
  bool engine_host_time = false;   // the stack has serving host time (IterationCost::host_s)
  // Op by op (iteration_cost.hpp PassOpTime): the prefill pass, and the mean decode pass
  // (each op's time per call averaged over the output_len - 1 decode passes).
  std::vector<PassOpTime> prefill_ops, decode_ops;
  std::int64_t decode_passes = 0;  // output_len - 1; with speculation the verify steps
  double first_draft_s = 0;        // speculation with a draft model: its part of first_decode
  // disaggregation: the batch's K,V from the prefill replica to the decode replica, and
  // what each pool serves, batch after batch (requests_per_s is the smaller)
  double kv_transfer_s = 0;
  double prefill_requests_per_s = 0, decode_requests_per_s = 0;
};

InferencePrediction predict_inference(const Scenario& scenario);

// The report's "inference" object: SCENARIO.md's keys plus the breakdown behind them.
nlohmann::json to_json(const InferencePrediction& p, const InferenceWorkload& workload, int plan_tp);

}  // namespace twinsim
