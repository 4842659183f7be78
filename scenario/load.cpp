// Scenario file -> YAML tree -> overrides -> sections -> cross-checks.
#include "scenario/load.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <map>
#include <set>
#include <system_error>

#include "scenario/default_stack.hpp"
#include "scenario/mapping_reader.hpp"
#include "scenario/read_sections.hpp"
#include "scenario/validate.hpp"
#include "scenario/yaml_guard.hpp"
#include "scenario/yaml_merge.hpp"

namespace twinsim {

std::vector<std::pair<std::string_view, std::string_view>> default_scenario_files();

namespace {

// `--set model.layers=2` on `model: gpt2-small` edits the catalog entry in place.
YAML::Node expand_catalog_name(const std::string& dotted_key, const YAML::Node& scalar) {
  YAML::Node preset(YAML::NodeType::Map);
  if (dotted_key == "model" || dotted_key == "cluster" || dotted_key == "cluster.gpu" ||
      dotted_key == "stack") {
    preset["preset"] = scalar.Scalar();
    return preset;
  }
  throw ScenarioError(dotted_key, scalar.Scalar(), "is a single value, so it has no keys to set");
}

// `--set cluster.gpu.KEY=...` on a cluster preset that names its GPU edits that GPU (the
// preset's `gpu`, a catalog name or a mapping), as `--set stack.KEY=...` edits a named stack.
YAML::Node inherit_from_preset(const std::string& dotted_key, const YAML::Node& parent) {
  if (dotted_key != "cluster.gpu" || !parent["preset"].IsDefined()) return YAML::Node();
  std::string name;
  const YAML::Node gpu = resolve_preset(parent, "cluster", name, catalog_node_type_node)["gpu"];
  if (!gpu.IsDefined()) return YAML::Node();
  return gpu.IsScalar() ? expand_catalog_name(dotted_key, gpu) : YAML::Clone(gpu);
}

// Scenario files are small: a larger one is a mistake (or /dev/zero), refused before reading.
constexpr std::uintmax_t kMaxScenarioBytes = 16u << 20;
// A key given twice in one mapping (YAML or JSON) is refused: parsers keep one of the two
// silently, and which one differs between them. load_yaml has bounded the walk: the depth
// and the nodes its aliases add.
void reject_duplicate_keys(const YAML::Node& node, const std::string& path, int depth) {
  if (depth > kMaxYamlDepth)
    throw ScenarioError(path.empty() ? "scenario" : path, "", "nests deeper than " + std::to_string(kMaxYamlDepth) + " levels");
  if (node.IsMap()) {
    std::set<std::string> seen;
    for (const auto& entry : node) {
      const std::string key = entry.first.IsScalar() ? entry.first.Scalar() : "";
      const std::string where = path.empty() ? key : path + "." + key;
      if (!key.empty() && !seen.insert(key).second) throw ScenarioError(where, "", "is given twice in one mapping");
      reject_duplicate_keys(entry.second, where, depth + 1);
    }
  } else if (node.IsSequence()) {
    for (std::size_t i = 0; i < node.size(); ++i)
      reject_duplicate_keys(node[i], path + "[" + std::to_string(i) + "]", depth + 1);
  }
}

YAML::Node parse_yaml(const std::string& text, const std::string& origin) {
  try {
    YAML::Node root = load_yaml(text, origin);
    if (!root.IsDefined() || root.IsNull()) return YAML::Node(YAML::NodeType::Map);
    reject_duplicate_keys(root, "", 0);
    return root;
  } catch (const YAML::Exception& e) {
    throw ScenarioError(origin, "", "is not valid YAML: line " + std::to_string(e.mark.line + 1) +
                                        ", column " + std::to_string(e.mark.column + 1) + ": " + e.msg);
  }
}

Scenario read_scenario(const YAML::Node& root) {
  MappingReader r(root, "");
  Scenario s;
  s.name = r.string("name", "");
  s.model = read_model(r.child("model"), "model");
  s.cluster = read_cluster(r.child("cluster"), "cluster");
  s.plan = read_plan(r.child("plan"), "plan");
  const bool names_stack = r.has("stack");
  if (names_stack) s.stack = read_stack(r.child("stack"), "stack");
  const bool training = r.has("training");
  const bool inference = r.has("inference");
  if (training == inference)
    throw ScenarioError(training ? "training" : "training/inference", "",
                        "exactly one of training or inference must be given");
  if (training) s.training = read_training(r.child("training"), "training");
  if (inference) s.inference = read_inference(r.child("inference"), "inference");
  if (r.has("goodput")) {
    if (!training) throw ScenarioError("goodput", "", "prices a training run's failures; this scenario is inference");
    s.goodput = read_goodput(r.child("goodput"), "goodput");
  }
  if (!names_stack) apply_default_stack(s);  // the workload's realistic software, not the device alone
  r.reject_unknown();
  return s;
}

// A relative path in a scenario file (`model.hf_config`, `training.data.path`) names a
// file beside the scenario.
void resolve_relative_path(YAML::Node section, const char* key, const std::filesystem::path& folder) {
  if (folder.empty() || !section.IsMap() || !section[key].IsScalar()) return;
  const std::filesystem::path file = section[key].Scalar();
  if (file.is_relative() && std::filesystem::exists(folder / file)) section[key] = (folder / file).string();
}

void resolve_relative_paths(YAML::Node& root, const std::filesystem::path& folder) {
  resolve_relative_path(root["model"], "hf_config", folder);
  resolve_relative_path(root, "cluster", folder);  // `cluster: my-node.yaml` beside the scenario
  if (root["training"].IsMap()) resolve_relative_path(root["training"]["data"], "path", folder);
}

Scenario load_scenario_node(YAML::Node root, const std::vector<std::string>& overrides, const std::string& origin,
                            const std::filesystem::path& folder) {
  try {
    if (!root.IsMap()) MappingReader check(root, "");  // throws: the scenario must be a mapping
    resolve_relative_paths(root, folder);
    for (const std::string& o : overrides) apply_override(root, o, expand_catalog_name, inherit_from_preset);
    Scenario s = read_scenario(root);
    resolve_and_validate(s);
    return s;
  } catch (const YAML::Exception& e) {
    throw ScenarioError(origin, "", std::string("could not be read: ") + e.what());
  }
}

}  // namespace

std::string scenario_text_with_override(const std::string& text, const std::string& assignment) {
  YAML::Node root = parse_yaml(text, "<scenario>");
  if (!root.IsMap()) MappingReader check(root, "");  // throws: the scenario must be a mapping
  try {
    apply_override(root, assignment, expand_catalog_name, inherit_from_preset);
  } catch (const YAML::Exception& e) {
    throw ScenarioError(assignment, "", std::string("could not be applied: ") + e.what());
  }
  YAML::Emitter out;
  out.SetMapFormat(YAML::Flow);
  out.SetSeqFormat(YAML::Flow);
  out << root;
  return out.c_str();
}

Scenario load_scenario_text(const std::string& text, const std::vector<std::string>& overrides,
                            const std::string& origin) {
  return load_scenario_node(parse_yaml(text, origin), overrides, origin, {});
}

namespace {

// The scenario file's text, refused before reading when it is no regular file or too large.
std::string read_scenario_text(const std::string& path) {
  std::error_code error;
  const auto status = std::filesystem::status(path, error);
  if (!error && std::filesystem::exists(status) && !std::filesystem::is_regular_file(status))
    throw ScenarioError("scenario", path, "is not a regular file (a directory, device or pipe)");
  if (!error && std::filesystem::exists(status)) {
    const std::uintmax_t bytes = std::filesystem::file_size(path, error);
    if (!error && bytes > kMaxScenarioBytes)
      throw ScenarioError("scenario", path,
                          "is " + std::to_string(bytes) + " bytes; a scenario file is at most 16 MiB");
  }
  // read(2) itself, so an error is told (/proc/self/mem reads as EIO, not as empty), and
  // at most the limit: a file under /proc says 0 bytes whatever it holds
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw ScenarioError("scenario", path, "cannot be opened (no such file, or not readable)");
  std::string text;
  char chunk[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const std::string why = std::generic_category().message(errno);
      ::close(fd);
      throw ScenarioError("scenario", path, "cannot be read (" + why + ")");
    }
    if (n == 0) break;
    text.append(chunk, static_cast<std::size_t>(n));
    if (text.size() > kMaxScenarioBytes) {
      ::close(fd);
      throw ScenarioError("scenario", path, "is more than 16 MiB; a scenario file is at most 16 MiB");
    }
  }
  ::close(fd);
  return text;
}

// Every value of the tree by its dotted path ("plan.tp", "stages[1]").
void flatten(const YAML::Node& node, const std::string& path, std::map<std::string, std::string>& out) {
  if (node.IsMap()) {
    for (const auto& kv : node) flatten(kv.second, join_key(path, kv.first.Scalar()), out);
  } else if (node.IsSequence()) {
    out[path] = std::to_string(node.size()) + " items";
    for (std::size_t i = 0; i < node.size(); ++i) flatten(node[i], path + "[" + std::to_string(i) + "]", out);
  } else {
    out[path] = node.IsScalar() ? node.Scalar() : "null";
  }
}

}  // namespace

Scenario load_scenario_file(const std::string& path, const std::vector<std::string>& overrides) {
  const std::string text = read_scenario_text(path);
  return load_scenario_node(parse_yaml(text, path), overrides, path, std::filesystem::path(path).parent_path());
}

std::map<std::string, std::string> scenario_keys(const std::string& path, const std::vector<std::string>& overrides) {
  const std::string origin = path.empty() ? "<default scenario>" : path;
  YAML::Node root = parse_yaml(path.empty() ? default_scenario_text() : read_scenario_text(path), origin);
  std::map<std::string, std::string> keys;
  try {
    if (!root.IsMap()) MappingReader check(root, "");  // throws: the scenario must be a mapping
    resolve_relative_paths(root, std::filesystem::path(path).parent_path());
    for (const std::string& o : overrides) apply_override(root, o, expand_catalog_name, inherit_from_preset);
    flatten(root, "", keys);
  } catch (const YAML::Exception& e) {
    throw ScenarioError(origin, "", std::string("could not be read: ") + e.what());
  }
  return keys;
}

std::string default_scenario_text() { return std::string(default_scenario_files().front().second); }

}  // namespace twinsim
