#pragma once
// Overrides written as one line ("plan.tp=2 plan.dp=4", what to_overrides and the refusal
// tables write) split at whitespace into the list load_scenario_text takes.
#include <sstream>
#include <string>
#include <vector>

namespace twinsim::test {

inline std::vector<std::string> words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

}  // namespace twinsim::test
