#pragma once
// A fuzz input: an optional first line "--set a=1;b=2" of overrides, then scenario text.
#include <string>
#include <vector>

namespace twinsim {

struct FuzzInput {
  std::string text;
  std::vector<std::string> overrides;
};

inline FuzzInput split_fuzz_input(const std::string& input) {
  FuzzInput in{input, {}};
  const std::size_t newline = input.find('\n');
  if (newline == std::string::npos || input.rfind("--set ", 0) != 0) return in;
  const std::string sets = input.substr(6, newline - 6);
  in.text = input.substr(newline + 1);
  std::size_t start = 0;
  while (true) {
    const std::size_t end = sets.find(';', start);
    in.overrides.push_back(sets.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return in;
}

}  // namespace twinsim
