// sim/cost/straggler_wait: each blocking collective of a repeating op list waits the
// straggler fraction of the compute since the list's previous collective, hand-worked.
#include <gtest/gtest.h>

#include <stdexcept>

#include "sim/cost/straggler_wait.hpp"

namespace twinsim {
namespace {

using R = WaitRole;

TEST(StragglerWait, EachCollectiveWaitsForTheComputeSinceThePreviousOne) {
  // compute 1, collective, compute 2, an overlapped collective, compute 4, collective
  std::vector<double> t{1, 0.5, 2, 0.3, 4, 0.5};
  add_straggler_waits(t, {R::compute, R::collective, R::compute, R::other, R::compute, R::collective}, 0.1);
  EXPECT_DOUBLE_EQ(t[1], 0.5 + 0.1 * 1);        // the list repeats: nothing after the last collective
  EXPECT_DOUBLE_EQ(t[5], 0.5 + 0.1 * (2 + 4));  // the overlapped one neither waits nor counts
  EXPECT_DOUBLE_EQ(t[3], 0.3);
  EXPECT_DOUBLE_EQ(t[0] + t[2] + t[4], 7.0);  // compute unchanged
}

TEST(StragglerWait, TheComputeAfterTheLastCollectiveCountsTowardsTheFirst) {
  std::vector<double> t{0.5, 1, 0.5, 3};
  add_straggler_waits(t, {R::collective, R::compute, R::collective, R::compute}, 0.5);
  EXPECT_DOUBLE_EQ(t[0], 0.5 + 0.5 * 3);
  EXPECT_DOUBLE_EQ(t[2], 0.5 + 0.5 * 1);
}

TEST(StragglerWait, NoCollectiveOrNoStragglerChangesNothing) {
  std::vector<double> t{1, 2};
  add_straggler_waits(t, {R::compute, R::compute}, 0.1);
  EXPECT_EQ(t, (std::vector<double>{1, 2}));
  t = {1, 0.5};
  add_straggler_waits(t, {R::compute, R::collective}, 0);
  EXPECT_EQ(t, (std::vector<double>{1, 0.5}));
  EXPECT_THROW(add_straggler_waits(t, {R::compute}, 0.1), std::invalid_argument);
}

}  // namespace
}  // namespace twinsim
