#pragma once
// YAML tree edits: a preset mapping overlaid by the keys the user wrote, and
// `--set a.b.c=value` overrides applied to a scenario tree.
#include <yaml-cpp/yaml.h>

#include <string>

namespace twinsim {

// A deep copy of `base` with every key of `overlay` written over it (mappings merge
// recursively; anything else replaces).
YAML::Node merge_mappings(const YAML::Node& base, const YAML::Node& overlay);

// Applies one "dotted.key=value" override; the value is parsed as a YAML scalar or
// flow collection ("4", "true", "[7, 8]"). `expand` turns a scalar met on the way
// (a catalog name) into a mapping, so `--set model.layers=2` works on `model: gpt2-small`.
using ExpandScalar = YAML::Node (*)(const std::string& dotted_key, const YAML::Node& scalar);
// `inherit` gives what a preset supplies for a key the tree lacks (an undefined node when
// nothing), so the override edits that instead of starting an empty mapping:
// `--set cluster.gpu.memory_efficiency=0.8` on `cluster: dgx-h100` edits the node's GPU.
using InheritKey = YAML::Node (*)(const std::string& dotted_key, const YAML::Node& parent);
void apply_override(YAML::Node& root, const std::string& assignment, ExpandScalar expand, InheritKey inherit = nullptr);

}  // namespace twinsim
