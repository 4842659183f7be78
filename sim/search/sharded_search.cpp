#include "sim/search/sharded_search.hpp"

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

}  // namespace twinsim
