#pragma once
// The "goodput" object of the report (SCENARIO.md) and its table lines.
#include <ostream>

#include <nlohmann/json_fwd.hpp>

#include "sim/goodput/goodput.hpp"

namespace twinsim {

nlohmann::json to_json(const GoodputReport& g);
nlohmann::json to_json(const TimeToTrain& t, std::int64_t steps);
// The table lines of a report's "goodput" object.
void print_goodput(std::ostream& out, const nlohmann::json& goodput);

}  // namespace twinsim
