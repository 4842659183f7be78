// Sections built by name or from a command line's text (load.hpp): the catalog's node
// types and stacks, and YAML flow mappings read as a scenario file's sections.
#include "scenario/errors.hpp"
#include "scenario/load.hpp"
#include "scenario/read_sections.hpp"
#include "scenario/yaml_guard.hpp"

namespace twinsim {

ClusterSpec catalog_cluster(const std::string& name) { return read_cluster(YAML::Node(name), "cluster"); }

ClusterSpec catalog_cluster_for_gpu(const std::string& gpu) {
  const GpuSpec wanted = catalog_gpu(gpu);  // throws with a "did you mean" hint
  std::string best;
  bool best_is_variant = true;
  for (const std::string& name : catalog_node_names()) {
    if (name == "host") continue;
    if (catalog_node(name).gpu.name != wanted.name) continue;
    // the reference node first: one written out whole (dgx-h100) before a node type whose
    // file starts from another (aws-p5: `preset: dgx-h100`), then the shorter name
    const bool variant = catalog_node_type_node(name, "--gpu")["preset"].IsDefined();
    if (best.empty() || (best_is_variant && !variant) || (variant == best_is_variant && name.size() < best.size()))
      best = name, best_is_variant = variant;
  }
  if (best.empty()) throw ScenarioError("--gpu", gpu, "is in no catalog node type");
  return catalog_cluster(best);
}

StackSpec catalog_stack(const std::string& name) { return read_stack(YAML::Node(name), "stack"); }

namespace {

YAML::Node parse_section(const std::string& text, const std::string& origin) {
  try {
    return load_yaml(text, origin);
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

SpeculativeDecoding speculative_from_text(const std::string& text, const std::string& origin) {
  return read_speculative(parse_section(text, origin), origin);
}

}  // namespace twinsim
