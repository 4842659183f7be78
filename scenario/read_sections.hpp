#pragma once
// Readers for each section of a scenario. Each takes the section's YAML node and its
// dotted path, checks every key, and throws ScenarioError on the first problem.
#include <yaml-cpp/yaml.h>

#include <optional>
#include <string>

#include "scenario/model_checks.hpp"
#include "scenario/scenario.hpp"

namespace twinsim {

// Catalog name, or mapping (optionally `preset: NAME` plus overrides).
ModelSpec read_model(const YAML::Node& node, const std::string& path);
GpuSpec read_gpu(const YAML::Node& node, const std::string& path);
// The model's cross-field rules (kv_heads divides heads, MLA's needs, ...), keys named
// under `path`: read_model's, and those of a model built in code (scenario/build.hpp).

// A cluster whose node count may be left to the plan (nodes == 0 then).
ClusterSpec read_cluster(const YAML::Node& node, const std::string& path);
// The software stack: a catalog name, or a mapping (optionally `preset: NAME`).
StackSpec read_stack(const YAML::Node& node, const std::string& path);

// The plan as written; dp == 0 when left out.
Plan read_plan(const YAML::Node& node, const std::string& path);
TrainingWorkload read_training(const YAML::Node& node, const std::string& path);
InferenceWorkload read_inference(const YAML::Node& node, const std::string& path);
SpeculativeDecoding read_speculative(const YAML::Node& node, const std::string& path);
// `goodput:` (scenario/read_goodput.cpp): failure rates, checkpointing, restart.
GoodputSpec read_goodput(const YAML::Node& node, const std::string& path);

// The YAML text of a catalog entry as a node; unknown names throw with a suggestion.
YAML::Node catalog_model_node(const std::string& name, const std::string& path);
YAML::Node catalog_gpu_node(const std::string& name, const std::string& path);
YAML::Node catalog_node_type_node(const std::string& name, const std::string& path);
YAML::Node catalog_stack_node(const std::string& name, const std::string& path);

// A section as written -> the full mapping to read: a catalog name resolves through
// `catalog`; a mapping may start from `preset: NAME` and override keys beside it (`name`
// becomes the preset's name, or "custom" for a mapping without one).
YAML::Node resolve_preset(const YAML::Node& node, const std::string& path, std::string& name,
                          YAML::Node (*catalog)(const std::string&, const std::string&));

}  // namespace twinsim
