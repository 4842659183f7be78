#pragma once
// Hugging Face `config.json` -> twinsim's model mapping (SCENARIO.md, `model.hf_config`).
//
// Each supported `model_type` maps its fields onto the keys of an inline `model:` mapping,
// which read_model then validates like any other. A field the mapping does not know is
// refused with its name, never guessed: an unknown field may change the architecture
// (a different MoE layer pattern, a vision tower), so silence would misprice the model.
// Fields that change nothing twinsim prices (token ids, rope_theta, epsilons,
// initialisers, dtypes) are listed as such, family by family.
#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

namespace twinsim {

// The model mapping for `config` (a parsed config.json); `path` names it in messages
// ("model.hf_config"). Throws ScenarioError naming the config field and the rule.
YAML::Node model_node_from_hf_config(const YAML::Node& config, const std::string& path);

// Reads and maps a config.json file (at most 1 MiB).
YAML::Node model_node_from_hf_config_file(const std::string& file, const std::string& path);

// Whether a model given by text is written as a file's path (a '/' or a .json ending),
// which no catalog name is: a missing one is then said to be missing.
bool written_as_path(const std::string& file_or_name);

// The model_type values model_node_from_hf_config accepts.
std::vector<std::string> hf_model_types();

}  // namespace twinsim
