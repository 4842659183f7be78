// Looks up the embedded catalogs (models/catalog, hardware/catalog) by name.
#include <filesystem>
#include <string>
#include <vector>

#include "hardware/catalog.hpp"
#include "models/catalog.hpp"
#include "scenario/errors.hpp"
#include "scenario/hardware_file.hpp"
#include "scenario/hf_config.hpp"
#include "scenario/load.hpp"
#include "scenario/read_sections.hpp"
#include "scenario/suggest.hpp"
#include "scenario/yaml_guard.hpp"
#include "scenario/yaml_merge.hpp"

namespace twinsim {

namespace {

using CatalogFiles = std::vector<std::pair<std::string_view, std::string_view>>;

std::vector<std::string> names_of(const CatalogFiles& files) {
  std::vector<std::string> names;
  for (const auto& f : files) names.emplace_back(f.first);
  return names;
}

YAML::Node find_entry(const CatalogFiles& files, const std::string& name, const std::string& path,
                      const std::string& what) {
  for (const auto& [stem, text] : files) {
    if (stem == name) {
      YAML::Node node = YAML::Load(std::string(text));
      if (!node.IsMap()) throw ScenarioError(path, name, "catalog entry is not a mapping");
      return node;
    }
  }
  throw ScenarioError(path, name, "is not a " + what + " in the catalog" + did_you_mean(name, names_of(files)));
}

}  // namespace

// A model name is a catalog YAML entry (models/catalog) or a Hugging Face config.json
// kept as its publisher wrote it (models/catalog/hf), mapped like a user's hf_config.
YAML::Node catalog_model_node(const std::string& name, const std::string& path) {
  for (const auto& [stem, text] : hf_model_catalog_files())
    if (stem == name) return model_node_from_hf_config(YAML::Load(std::string(text)), path + "(catalog " + name + ")");
  CatalogFiles all = model_catalog_files();
  const CatalogFiles hf = hf_model_catalog_files();
  all.insert(all.end(), hf.begin(), hf.end());
  return find_entry(all, name, path, "model");
}
YAML::Node catalog_gpu_node(const std::string& name, const std::string& path) {
  return find_entry(gpu_catalog_files(), name, path, "GPU");
}
namespace {

std::string& host_cluster_file() {
  static std::string file;  // set once by the command line before it loads a scenario
  return file;
}

bool names_a_file(const std::string& name) {
  const std::string ext = std::filesystem::path(name).extension().string();
  return ext == ".yaml" || ext == ".yml" || ext == ".json";
}

// A hardware file written out whole (a calibration, or a user's own node type).
YAML::Node hardware_file_node(const std::string& file, const std::string& path) {
  if (!std::filesystem::is_regular_file(file)) throw ScenarioError(path, file, "names no hardware file");
  YAML::Node node;
  try {
    node = YAML::LoadFile(file);
  } catch (const YAML::Exception& e) {
    throw ScenarioError(path, file, "is not valid YAML: " + e.msg);
  }
  if (!node.IsMap()) throw ScenarioError(path, file, "must hold a cluster mapping (gpu, gpus_per_node, ...)");
  return node;
}

}  // namespace

void set_host_cluster_file(const std::string& file) { host_cluster_file() = file; }

YAML::Node catalog_node_type_node(const std::string& name, const std::string& path) {
  if (name == "host" && !host_cluster_file().empty()) return hardware_file_node(host_cluster_file(), path);
  if (names_a_file(name)) return hardware_file_node(name, path);
  return find_entry(node_catalog_files(), name, path, "node type");
}

YAML::Node catalog_stack_node(const std::string& name, const std::string& path) {
  return find_entry(stack_catalog_files(), name, path, "software stack");
}

ModelSpec catalog_model(const std::string& name) { return read_model(YAML::Node(name), "model"); }

ModelSpec load_model_text(const std::string& text, const std::string& origin) {
  YAML::Node node;
  try {
    node = load_yaml(text, origin);
  } catch (const YAML::Exception& e) {
    throw ScenarioError(origin, "", "is not valid YAML or JSON: " + e.msg);
  }
  return read_model(node, origin);
}

ModelSpec load_model(const std::string& file_or_name) {
  if (!std::filesystem::exists(file_or_name) && !written_as_path(file_or_name)) return catalog_model(file_or_name);
  YAML::Node node(YAML::NodeType::Map);
  node["hf_config"] = file_or_name;
  return read_model(node, "model");
}
GpuSpec catalog_gpu(const std::string& name) { return read_gpu(YAML::Node(name), "cluster.gpu"); }
ClusterSpec catalog_node(const std::string& name) {
  ClusterSpec c = read_cluster(YAML::Node(name), "cluster");
  c.nodes = 1;
  return c;
}

std::vector<std::string> catalog_model_names() {
  std::vector<std::string> names = names_of(model_catalog_files());
  for (const std::string& n : names_of(hf_model_catalog_files())) names.push_back(n);
  return names;
}
std::vector<std::string> catalog_gpu_names() { return names_of(gpu_catalog_files()); }
std::vector<std::string> catalog_node_names() { return names_of(node_catalog_files()); }

namespace {

// A catalog entry, itself starting from another where its file says `preset: NAME` (an AWS
// node type from the DGX whose GPUs and NVSwitch it has), its own keys over the other's.
YAML::Node catalog_entry(const std::string& name, const std::string& path,
                         YAML::Node (*catalog)(const std::string&, const std::string&), int depth = 0) {
  const YAML::Node entry = catalog(name, path);
  if (!entry.IsMap() || !entry["preset"].IsDefined()) return entry;
  const YAML::Node base = entry["preset"];
  if (!base.IsScalar()) throw ScenarioError(path + ".preset", name, "must name a catalog entry in the entry's file");
  if (depth >= 4) throw ScenarioError(path + ".preset", name, "catalog presets nest more than 4 deep (a cycle?)");
  YAML::Node overlay = YAML::Clone(entry);
  overlay.remove("preset");
  return merge_mappings(catalog_entry(base.Scalar(), path, catalog, depth + 1), overlay);
}

}  // namespace

YAML::Node resolve_preset(const YAML::Node& node, const std::string& path, std::string& name,
                          YAML::Node (*catalog)(const std::string&, const std::string&)) {
  if (!node.IsDefined() || node.IsNull()) throw ScenarioError(path, "", "is required");
  if (node.IsScalar()) {
    name = node.Scalar();
    return catalog_entry(name, path, catalog);
  }
  if (node.IsMap() && node["preset"].IsDefined()) {
    const YAML::Node preset = node["preset"];
    if (!preset.IsScalar())
      throw ScenarioError(path + ".preset", "", "must be a catalog name, not a list or mapping");
    name = preset.Scalar();
    YAML::Node overlay = YAML::Clone(node);
    overlay.remove("preset");
    return merge_mappings(catalog_entry(name, path + ".preset", catalog), overlay);
  }
  name = "custom";
  return node;
}

}  // namespace twinsim
