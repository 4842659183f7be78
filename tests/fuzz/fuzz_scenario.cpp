// libFuzzer target over the scenario loader and the --set parser. The input's first
// line holds `--set` assignments separated by ';', the rest is the scenario text.
// Any exception other than ScenarioError / OverflowError is a bug, and so is a crash.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "models/checked_math.hpp"
#include "scenario/load.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const std::size_t newline = input.find('\n');
  std::vector<std::string> overrides;
  std::string text = input;
  if (newline != std::string::npos && input.rfind("--set ", 0) == 0) {
    std::string sets = input.substr(6, newline - 6);
    text = input.substr(newline + 1);
    std::size_t start = 0;
    while (start <= sets.size()) {
      const std::size_t end = sets.find(';', start);
      overrides.push_back(sets.substr(start, end == std::string::npos ? std::string::npos : end - start));
      if (end == std::string::npos) break;
      start = end + 1;
    }
  }
  try {
    twinsim::load_scenario_text(text, overrides, "<fuzz>");
  } catch (const twinsim::ScenarioError&) {
  } catch (const twinsim::OverflowError&) {
  }
  return 0;
}
