// The incremental Pareto front against a naive all-pairs filter, in any arrival order.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "sim/search/pareto.hpp"

namespace twinsim {
namespace {

std::vector<ParetoPoint> random_points(int n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<ParetoPoint> pts;
  for (int i = 0; i < n; ++i) {
    ParetoPoint p;
    p.step_s = static_cast<double>(rng() % 20);  // small ranges: many ties
    p.peak_bytes = rng() % 20;
    p.gpus = 1 << (rng() % 5);
    p.plan.tp = i + 1;  // distinct plans
    pts.push_back(p);
  }
  return pts;
}

// Naive: keep p when no q is no worse everywhere and better somewhere; among equal
// points the smallest plan.
std::vector<ParetoPoint> naive_front(const std::vector<ParetoPoint>& pts) {
  std::vector<ParetoPoint> out;
  for (const ParetoPoint& p : pts) {
    bool dominated = false;
    for (const ParetoPoint& q : pts) {
      const bool no_worse = q.step_s <= p.step_s && q.peak_bytes <= p.peak_bytes && q.gpus <= p.gpus;
      const bool equal = q.step_s == p.step_s && q.peak_bytes == p.peak_bytes && q.gpus == p.gpus;
      if (no_worse && (!equal || canonical_less(q.plan, p.plan))) dominated = true;
    }
    if (!dominated) out.push_back(p);
  }
  return out;
}

std::vector<int> plans_of(std::vector<ParetoPoint> pts) {
  std::vector<int> ids;
  for (const ParetoPoint& p : pts) ids.push_back(p.plan.tp);
  std::sort(ids.begin(), ids.end());
  return ids;
}

TEST(Pareto, MatchesNaiveFilterInAnyOrder) {
  for (unsigned seed = 1; seed <= 5; ++seed) {
    std::vector<ParetoPoint> pts = random_points(400, seed);
    const std::vector<int> expected = plans_of(naive_front(pts));
    std::mt19937 rng(seed * 7);
    for (int order = 0; order < 3; ++order) {
      std::shuffle(pts.begin(), pts.end(), rng);
      ParetoFront front;
      for (const ParetoPoint& p : pts) front.add(p);
      EXPECT_EQ(plans_of(front.points()), expected) << "seed " << seed;
    }
  }
}

}  // namespace
}  // namespace twinsim
