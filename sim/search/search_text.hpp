#pragma once
// Text forms of search results, as `twinsim search` prints them (search_json.hpp has the
// JSON ones): the ranked table with the Pareto front, the CSV, the recompute mix, and
// `twinsim capacity`'s training and serving answers.
#include <ostream>

#include "sim/search/capacity.hpp"
#include "sim/search/plan_search.hpp"
#include "sim/search/recompute_budget.hpp"
#include "sim/search/serving_capacity.hpp"

namespace twinsim {

// rank,gpus,tp,...,pareto,offload_optimizer,offload_activations_layers,offload_device: the top
// plans, then the Pareto front (rank 0)
void write_csv(std::ostream& out, const SearchResult& r);
// The scenario's settings its searched plans keep where they apply (sim/search/candidate.cpp):
// ZeRO++ on ZeRO-3 plans, gradient compression on ZeRO 0-2 plans, parameter offload on
// ZeRO-3 plans that offload the optimizer; nothing when it has none.
void print_kept_settings(std::ostream& out, const Plan& plan);
void print_result(std::ostream& out, const SearchResult& r);
void print_mix(std::ostream& out, const RecomputeMix& r);
void print_capacity(std::ostream& out, const CapacityRequest& r, const CapacityPlan& p);
void print_serving_capacity(std::ostream& out, const ServingCapacityRequest& r, const ServingCapacityPlan& p);

}  // namespace twinsim
