#pragma once
// The search's closed-form pass split over processes (`mpirun -np N twinsim search`): each
// process walks every N-th block of the space (SearchSpaceOptions::shard_index / count),
// then the processes exchange their best plans and Pareto fronts and every process merges
// them (merge_passes), which gives the single-process pass (tests/unit/search/).
#include <optional>

#include "sim/engine/exchange.hpp"
#include "sim/search/plan_search.hpp"

namespace twinsim {

// Collective over `exchange`. `options.progress` is called on process 0 only.
AnalyticPass sharded_analytic_pass(const Scenario& base, SearchOptions options, int keep, engine::Exchange& exchange);

// search_plans split over the processes: the pass sharded, then process 0 confirms the
// best plans with the event engine and gets the result (analytic_s: the sharded pass's
// wall time); every other process gets nothing.
std::optional<SearchResult> sharded_search_plans(const Scenario& base, const SearchOptions& options,
                                                 engine::Exchange& exchange);

}  // namespace twinsim
