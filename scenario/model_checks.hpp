#pragma once
// A model's cross-field rules (heads and KV heads, MoE dense layers, MLA's constraints),
// the same for a model read from YAML and one built in code (build.hpp).
#include <string>

#include "models/model_spec.hpp"

namespace twinsim {

// Throws ScenarioError naming the field under `path` ("model").
void check_model(const ModelSpec& model, const std::string& path);

}  // namespace twinsim
