#include "scenario/build.hpp"

#include "scenario/errors.hpp"
#include "scenario/read_sections.hpp"
#include "scenario/validate.hpp"

namespace twinsim {

Scenario validated_scenario(Scenario s) {
  check_model(s.model, "model");
  resolve_and_validate(s);
  return s;
}

ClusterSpec catalog_cluster(const std::string& name) { return read_cluster(YAML::Node(name), "cluster"); }

StackSpec catalog_stack(const std::string& name) { return read_stack(YAML::Node(name), "stack"); }

namespace {

YAML::Node parse_section(const std::string& text, const std::string& origin) {
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw ScenarioError(origin, text, "is not a catalog name or a YAML mapping: " + e.msg);
  }
}

}  // namespace

ClusterSpec cluster_from_text(const std::string& text, const std::string& origin) {
  return read_cluster(parse_section(text, origin), origin);
}

StackSpec stack_from_text(const std::string& text, const std::string& origin) {
  return read_stack(parse_section(text, origin), origin);
}

}  // namespace twinsim
