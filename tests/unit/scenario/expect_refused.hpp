#pragma once
// Refusal tables for the tests: every (setting, message) case must make build(setting) throw
// a ScenarioError whose message holds `message` (the field and the rule), not merely fail.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "scenario/errors.hpp"

namespace twinsim::test {

template <class Build>
void expect_refused(const Build& build, const std::vector<std::pair<std::string, std::string>>& cases) {
  for (const auto& [setting, message] : cases) {
    try {
      build(setting);
      ADD_FAILURE() << setting << " was accepted";
    } catch (const ScenarioError& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  }
}

}  // namespace twinsim::test
