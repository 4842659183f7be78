#pragma once
// The built-in hardware catalog (hardware/catalog/gpus/*.yaml and nodes/*.yaml,
// embedded in the binary at build time), each figure with its source in a comment.
#include <string_view>
#include <utility>
#include <vector>

namespace twinsim {

// (name, YAML text) of every catalog GPU; the name is the file's stem.
std::vector<std::pair<std::string_view, std::string_view>> gpu_catalog_files();
// (name, YAML text) of every catalog node type (written like an inline `cluster:`).
std::vector<std::pair<std::string_view, std::string_view>> node_catalog_files();
// (name, YAML text) of every catalog software stack (hardware/catalog/stacks/*.yaml).
std::vector<std::pair<std::string_view, std::string_view>> stack_catalog_files();

}  // namespace twinsim
