#pragma once
// YAML text read with limits, before any tree is built or walked. yaml-cpp shares an
// aliased node instead of copying it, so a "billion laughs" file (each level nine aliases
// of the one before) parses in microseconds, but every walk over the tree (the duplicate-
// key check, the readers, a clone) visits each alias path: 9^9 nodes. A first pass over
// the parser's events counts the nodes as the aliases would expand them and stops at the
// budget; it also bounds the nesting depth and refuses a key that is not a single value.
#include <cstdint>
#include <string>

#include <yaml-cpp/yaml.h>

namespace twinsim {

// Nodes the aliases of one YAML text may add when expanded (the nodes written out in
// full are bounded by the file's size). No scenario, catalog entry or config.json uses
// more than a few hundred.
constexpr std::uint64_t kMaxYamlAliasNodes = 100'000;
// Collections nested deeper than any scenario key needs (aliases counted expanded).
constexpr int kMaxYamlDepth = 32;

// The text as a YAML tree (null for an empty text). Throws ScenarioError naming `origin`
// with the line and column for a syntax error, an alias expansion past the budget, a
// nesting past the depth limit, or a mapping key that is a list, a mapping or empty.
YAML::Node load_yaml(const std::string& text, const std::string& origin);

}  // namespace twinsim
