// Replays every input in tests/fuzz/regressions (inputs the fuzzer once found to crash or
// misbehave, and hand-written nasty ones): each must load or be refused with a
// ScenarioError / OverflowError — never crash or throw anything else.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "models/checked_math.hpp"
#include "scenario/load.hpp"
#include "tests/fuzz/csv_input.hpp"
#include "tests/fuzz/fuzz_input.hpp"

namespace twinsim {
namespace {

TEST(FuzzRegressions, EveryInputLoadsOrIsRefusedCleanly) {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(TWINSIM_SOURCE_DIR) + "/tests/fuzz/regressions")) {
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    try {
      const FuzzInput input = split_fuzz_input(text.str());
      load_scenario_text(input.text, input.overrides);
    } catch (const ScenarioError&) {
    } catch (const OverflowError&) {
    } catch (const std::exception& e) {
      ADD_FAILURE() << entry.path() << " threw " << e.what();
    }
    ++count;
  }
  EXPECT_GT(count, 0);
}

// The CSV readers' seeds and hostile tables (tests/fuzz/csv, issue 58): each is read or
// refused with a std::runtime_error naming the file's line, never a crash.
TEST(FuzzRegressions, EveryCsvInputIsReadOrRefusedCleanly) {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(TWINSIM_SOURCE_DIR) + "/tests/fuzz/csv")) {
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    try {
      read_fuzz_csv(text.str());
    } catch (const std::runtime_error&) {
    } catch (const std::exception& e) {
      ADD_FAILURE() << entry.path() << " threw " << e.what();
    }
    ++count;
  }
  EXPECT_GT(count, 0);
}

}  // namespace
}  // namespace twinsim
