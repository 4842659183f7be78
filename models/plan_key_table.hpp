#pragma once
// The `plan` keys as a Markdown table, written from the plan-field table (models/plan_fields.hpp):
// docs/SCENARIO.md's "Plan keys" section is this text, between its two marker comments, and
// a test fails when the two differ (tests/unit/models/plan_key_table_test.cpp), so the page
// cannot drift from the code.
#include <string>
#include <string_view>

namespace twinsim {

// The markers the table sits between in the docs.
inline constexpr std::string_view kPlanKeyTableBegin = "<!-- plan-keys: written from models/plan_fields.hpp -->";
inline constexpr std::string_view kPlanKeyTableEnd = "<!-- plan-keys: end -->";

// One row a knob: | key | values | default | searched |.
std::string plan_key_table_markdown();

}  // namespace twinsim
