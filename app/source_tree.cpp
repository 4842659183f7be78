#include "app/source_tree.hpp"

namespace twinsim {

std::filesystem::path find_in_source_tree(const std::filesystem::path& relative) {
  namespace fs = std::filesystem;
  if (relative.is_absolute() || fs::exists(relative)) return relative;
  // TWINSIM_SOURCE_TREE: set for this file alone by app/CMakeLists.txt
  const fs::path in_tree = fs::path(TWINSIM_SOURCE_TREE) / relative;
  if (fs::exists(in_tree)) return in_tree;
  return relative;
}

}  // namespace twinsim
