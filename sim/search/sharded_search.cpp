#include "sim/search/sharded_search.hpp"

#include <chrono>

namespace twinsim {

AnalyticPass sharded_analytic_pass(const Scenario& base, SearchOptions options, int keep, engine::Exchange& exchange) {
  options.space.shard_index = exchange.process();
  options.space.shard_count = exchange.processes();
  if (exchange.process() != 0) options.progress = nullptr;
  const AnalyticPass mine = run_analytic_pass(base, options, keep);
  AnalyticPass all;
  all.candidates = 0;
  const std::vector<std::int64_t> counts =
      engine::gather_items(exchange, std::vector<std::int64_t>{mine.candidates, mine.fitting});
  for (std::size_t p = 0; p < counts.size(); p += 2) all.candidates += counts[p], all.fitting += counts[p + 1];
  all.best = engine::gather_items(exchange, mine.best);
  for (const ParetoPoint& p : engine::gather_items(exchange, mine.pareto.points())) all.pareto.add(p);
  return merge_passes({all}, keep);
}

std::optional<SearchResult> sharded_search_plans(const Scenario& base, const SearchOptions& options,
                                                 engine::Exchange& exchange) {
  const auto t0 = std::chrono::steady_clock::now();
  const AnalyticPass merged = sharded_analytic_pass(base, options, confirm_count(options), exchange);
  if (exchange.process() != 0) return std::nullopt;
  SearchResult r = finish_search(base, options, merged);
  r.analytic_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace twinsim
