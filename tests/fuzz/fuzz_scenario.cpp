// libFuzzer target over the scenario loader and the --set parser. The input's first
// line holds `--set` assignments separated by ';', the rest is the scenario text.
// Any exception other than ScenarioError / OverflowError is a bug, and so is a crash.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "models/checked_math.hpp"
#include "scenario/load.hpp"
#include "tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const twinsim::FuzzInput in = twinsim::split_fuzz_input(std::string(reinterpret_cast<const char*>(data), size));
  try {
    twinsim::load_scenario_text(in.text, in.overrides, "<fuzz>");
  } catch (const twinsim::ScenarioError&) {
  } catch (const twinsim::OverflowError&) {
  }
  return 0;
}
