// The closed form's cache of plan-only prices (sim/search/knob_cache.hpp): keyed by every
// knob, so a plan that differs in any one is priced again, and the estimate is the same
// whether its root-unit prices came from the cache or not.
#include <gtest/gtest.h>

#include "sim/search/analytic.hpp"
#include "sim/search/knob_cache.hpp"
#include "tests/unit/scenario/device_alone.hpp"

namespace twinsim {
namespace {

TEST(KnobCache, AnyOneKnobChangesTheKey) {
  const PlanKnobs a;
  PlanKnobs hpz = a, nvme = a, ratio = a, modules = a;
  hpz.zero_hpz_partition_size = 8;            // an int knob that is never searched
  nvme.offload_device = OffloadDevice::nvme;  // a choice
  ratio.gradient_topk_ratio = 0.02;           // the one real number
  modules.recompute_modules = 1u << 2;        // the module set
  EXPECT_TRUE(same_knobs(a, PlanKnobs{}));
  for (const PlanKnobs* other : {&hpz, &nvme, &ratio, &modules}) {
    EXPECT_FALSE(same_knobs(a, *other));
    EXPECT_NE(knobs_hash(a), knobs_hash(*other));
  }
}

TEST(KnobCache, FillsOncePerKeyAndAgainAfterAnEviction) {
  PlanKnobs a, b;
  b.dp = 2;
  KnobCache<int> one_slot(1);  // every key lands on the one slot
  int filled = 0;
  auto fill_with = [&](int v) {
    return [&filled, v] {
      ++filled;
      return v;
    };
  };
  EXPECT_EQ(one_slot.get(a, fill_with(1)), 1);
  EXPECT_EQ(one_slot.get(a, fill_with(99)), 1);  // a hit: fill() not called
  EXPECT_EQ(filled, 1);
  EXPECT_EQ(one_slot.get(b, fill_with(2)), 2);  // b evicts a
  EXPECT_EQ(one_slot.get(a, fill_with(3)), 3);  // a priced again
  EXPECT_EQ(filled, 3);
  EXPECT_EQ(one_slot.fills(), 3u);
}

// Llama-3 8B under ZeRO-3 and ZeRO-2 on one to four DGX nodes: each plan's estimate, made
// after other plans filled the cache (its own knobs with another micro-batch, other dp,
// other ZeRO stages), equals a fresh model's, which prices its root unit afresh.
TEST(KnobCache, CachedRootUnitGivesTheFreshEstimate) {
  const Scenario base = test::device_alone(R"(
model: llama3-8b
cluster: dgx-h100
training: {seq_len: 4096, global_batch: 64, micro_batch: 1, precision: bf16}
plan: {tp: 1, pp: 1, dp: 8, zero: 3}
)");
  SearchSpaceOptions o;
  o.min_gpus = 8, o.max_gpus = 32, o.max_micro_batch = 2, o.max_cp = 1;
  const SearchSpace space = make_search_space(base, o);
  AnalyticModel warm(base, space);
  int checked = 0;
  for_each_candidate(space, [&](const Candidate& c) {
    if (c.zero < 2) return;
    const AnalyticEstimate cached = warm.estimate(c);
    AnalyticModel fresh(base, space);
    EXPECT_EQ(cached.step_s, fresh.estimate(c).step_s) << describe(c);
    ++checked;
  });
  EXPECT_GT(checked, 20);
}

}  // namespace
}  // namespace twinsim
