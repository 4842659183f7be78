// Splitting the space into shards (as MPI ranks would) and merging their passes gives
// exactly the single-process answer: same counts, same best plans, same Pareto front.
#include <gtest/gtest.h>

#include <thread>

#include "scenario/errors.hpp"
#include "scenario/load.hpp"
#include "sim/search/plan_search.hpp"
#include "sim/search/sharded_search.hpp"
#include "tests/unit/engine/thread_exchange.hpp"

namespace twinsim {
namespace {

Scenario llama3_8b() {
  return load_scenario_text(R"(
model: llama3-8b
cluster: dgx-h100
training: {seq_len: 4096, global_batch: 32, micro_batch: 1, precision: bf16}
plan: {tp: 1, pp: 1, dp: 1}
)");
}

void expect_same_pass(const AnalyticPass& merged, const AnalyticPass& whole) {
  EXPECT_EQ(merged.candidates, whole.candidates);
  EXPECT_EQ(merged.fitting, whole.fitting);
  ASSERT_EQ(merged.best.size(), whole.best.size());
  for (std::size_t i = 0; i < whole.best.size(); ++i)
    EXPECT_EQ(describe(merged.best[i].plan), describe(whole.best[i].plan)) << i;
  const auto a = whole.pareto.sorted(), b = merged.pareto.sorted();
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(describe(a[i].plan), describe(b[i].plan)) << i;
}

TEST(SearchMerge, ShardedPassesMergeToTheWholePass) {
  const Scenario base = llama3_8b();
  SearchOptions o;
  o.space.min_gpus = 1, o.space.max_gpus = 32, o.space.max_micro_batch = 2, o.space.max_cp = 2;
  const AnalyticPass whole = run_analytic_pass(base, o, 15);
  std::vector<AnalyticPass> parts;
  for (int i = 0; i < 4; ++i) {
    o.space.shard_index = i, o.space.shard_count = 4;
    parts.push_back(run_analytic_pass(base, o, 15));
  }
  expect_same_pass(merge_passes(parts, 15), whole);
  EXPECT_GT(whole.fitting, 0);
}

// The pass split over processes through the engine's Exchange (what `mpirun twinsim
// search` runs over MPI), with threads as the processes: every process holds the whole pass.
TEST(SearchMerge, EveryProcessOfTheShardedPassHoldsTheWholePass) {
  const Scenario base = llama3_8b();
  SearchOptions o;
  o.space.min_gpus = 1, o.space.max_gpus = 32, o.space.max_micro_batch = 2, o.space.max_cp = 2;
  const AnalyticPass whole = run_analytic_pass(base, o, 15);
  for (int n : {1, 3}) {
    Table table(n);
    std::vector<AnalyticPass> got(n);
    std::vector<std::thread> threads;
    for (int p = 0; p < n; ++p)
      threads.emplace_back([&, p] {
        ThreadExchange exchange(table, p);
        got[p] = sharded_analytic_pass(base, o, 15, exchange);
      });
    for (std::thread& t : threads) t.join();
    for (int p = 0; p < n; ++p) expect_same_pass(got[p], whole);
  }
}

// A space of more plans than options.max_plans is refused before any estimate, naming
// the flag; one of exactly that many runs.
TEST(SearchMerge, ASpaceLargerThanMaxPlansIsRefusedUpFront) {
  const Scenario base = llama3_8b();
  SearchOptions o;
  o.space.min_gpus = 1, o.space.max_gpus = 32, o.space.max_micro_batch = 2, o.space.max_cp = 2;
  o.max_plans = 0;
  const std::int64_t plans = run_analytic_pass(base, o, 1).candidates;
  o.space.shard_index = 1, o.space.shard_count = 4;  // the limit is on the whole space, not a shard
  o.max_plans = plans - 1;
  try {
    run_analytic_pass(base, o, 1);
    FAIL() << "not refused";
  } catch (const ScenarioError& e) {
    EXPECT_EQ(e.key, "--max-plans");
  }
  o.max_plans = plans;
  EXPECT_GT(run_analytic_pass(base, o, 1).candidates, 0);
}

}  // namespace
}  // namespace twinsim
