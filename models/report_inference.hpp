#pragma once
// The serving figures both reports carry in their "inference" section (docs/SCENARIO.md):
// the simulator's prediction (sim/inference/batch_prediction) and the executor's measured
// static batch (exec/train/inference_run) write them through this struct, the comparison
// (compare/) and the text report read them back through it, so these keys live here only.
// Each side adds its own keys (passes, ops, the KV pool) to the same object.
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace twinsim {

struct InferenceSummary {
  double ttft_s = 0;                    // time to first token: the prefill pass
  double tpot_s = 0;                    // time per output token: one decode pass
  double output_tokens_per_s = 0;       // every replica's batch
  double kv_cache_bytes_per_token = 0;  // the model's cache per cached token
};

// Adds the summary's keys to `inference` (an object, or null: made one).
void write_inference_summary(nlohmann::json& inference, const InferenceSummary& s);

// Reads them from a report's "inference" object; `side` names the report in errors. Every
// key is required (std::invalid_argument naming it).
InferenceSummary read_inference_summary(const nlohmann::json& inference, const std::string& side);

}  // namespace twinsim
