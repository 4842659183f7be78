#pragma once
// JSON forms of search results, shared by `twinsim search --json` and the Python module.
#include <nlohmann/json_fwd.hpp>

#include "sim/search/capacity.hpp"
#include "sim/search/plan_search.hpp"
#include "sim/search/recompute_budget.hpp"
#include "sim/search/serving_capacity.hpp"

namespace twinsim {

nlohmann::json to_json(const Plan& plan);  // every knob of the plan section, by its key
// the searched knobs, GPUs and `overrides` of the scenario plan it was searched from
nlohmann::json to_json(const Candidate& c, const Plan& scenario);
nlohmann::json to_json(const SearchResult& r, Objective objective);
nlohmann::json to_json(const RecomputeMix& r);
nlohmann::json to_json(const CapacityRequest& request, const CapacityPlan& plan);
nlohmann::json to_json(const ServingCapacityRequest& request, const ServingCapacityPlan& plan);

}  // namespace twinsim
