#pragma once
// Files the command line reads from the source tree it was built from (the validation
// suites, the calibrated host file), so that it works from any working directory.
#include <filesystem>

namespace twinsim {

// `relative` (e.g. "scenarios/validation/host") from the working directory when it is
// there, else from the source tree this binary was built from when that is there, else
// `relative` unchanged (a message then names the path the user would expect).
std::filesystem::path find_in_source_tree(const std::filesystem::path& relative);

}  // namespace twinsim
