#pragma once
// `twinsim describe-model`: a model as twinsim reads it (the keys of an inline `model:`
// mapping, so the output can be pasted into a scenario) with its derived counts.
#include <nlohmann/json_fwd.hpp>

#include "models/model_spec.hpp"

namespace twinsim {

// {"model": {...inline mapping keys...}, "params": {total, active, embedding,
//  output_layer, mtp}, "kv_cache_bytes_per_token_bf16": ...} (SCENARIO.md).
nlohmann::json describe_model(const ModelSpec& model);

}  // namespace twinsim
