#include "scenario/yaml_merge.hpp"

#include <vector>

#include "scenario/errors.hpp"
#include "scenario/yaml_guard.hpp"

namespace twinsim {

YAML::Node merge_mappings(const YAML::Node& base, const YAML::Node& overlay) {
  YAML::Node out = YAML::Clone(base);
  for (const auto& kv : overlay) {
    const std::string key = kv.first.as<std::string>();
    if (out[key].IsMap() && kv.second.IsMap())
      out[key] = merge_mappings(out[key], kv.second);
    else
      out[key] = YAML::Clone(kv.second);
  }
  return out;
}

static std::vector<std::string> split_dots(const std::string& key) {
  std::vector<std::string> parts;
  std::string cur;
  for (char c : key) {
    if (c == '.') parts.push_back(cur), cur.clear();
    else cur += c;
  }
  parts.push_back(cur);
  return parts;
}

void apply_override(YAML::Node& root, const std::string& assignment, ExpandScalar expand, InheritKey inherit) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw ScenarioError("--set", assignment, "must have the form key=value, e.g. plan.tp=4");
  const std::string key = assignment.substr(0, eq);
  const std::string text = assignment.substr(eq + 1);
  // YAML reads an empty value as null, which resets the key to its default: said, not guessed
  if (text.find_first_not_of(" \t") == std::string::npos)
    throw ScenarioError("--set", assignment, "has no value after '=' (write " + key + "=null to reset the key to its default)");
  const std::vector<std::string> parts = split_dots(key);
  for (const std::string& p : parts)
    if (p.empty()) throw ScenarioError("--set", assignment, "has an empty part in its key");

  YAML::Node value;
  try {
    value = load_yaml(text, key);
  } catch (const YAML::Exception& e) {
    throw ScenarioError(key, text, "is not a valid value: " + e.msg);
  }

  // Walk down with fresh handles (yaml-cpp nodes alias, so reassigning one rebinds it).
  std::vector<YAML::Node> chain{root};
  std::string dotted;
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    dotted = dotted.empty() ? parts[i] : dotted + "." + parts[i];
    YAML::Node parent = chain.back();
    YAML::Node next = parent[parts[i]];
    if (next.IsScalar()) {
      parent[parts[i]] = expand(dotted, next);
      next = parent[parts[i]];
    } else if (!next.IsDefined() || next.IsNull()) {
      const YAML::Node inherited = inherit != nullptr ? inherit(dotted, parent) : YAML::Node();
      parent[parts[i]] = inherited.IsDefined() ? inherited : YAML::Node(YAML::NodeType::Map);
      next = parent[parts[i]];
    } else if (!next.IsMap()) {
      throw ScenarioError(dotted, "", "is not a mapping, so " + key + " cannot be set");
    }
    chain.push_back(next);
  }
  chain.back()[parts.back()] = value;
}

}  // namespace twinsim
