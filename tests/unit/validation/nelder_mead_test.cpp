// The optimizer the calibration fit uses, on functions with known minima.
#include <gtest/gtest.h>

#include <cmath>

#include "sim/validate/nelder_mead.hpp"

namespace twinsim {
namespace {

TEST(NelderMead, FindsTheMinimumOfAShiftedQuadratic) {
  auto f = [](const std::vector<double>& x) { return std::pow(x[0] - 1.5, 2) + 3 * std::pow(x[1] + 0.5, 2); };
  NelderMeadOptions o;
  o.max_evaluations = 400;
  o.tolerance = 1e-12;
  const NelderMeadResult r = nelder_mead(f, {0, 0}, o);
  EXPECT_NEAR(r.x[0], 1.5, 1e-4);
  EXPECT_NEAR(r.x[1], -0.5, 1e-4);
  EXPECT_LE(r.evaluations, 400 + 2 + 2);  // the last step may overrun by n + 2
}

// Rosenbrock's banana valley (Rosenbrock 1960), the classic test of Nelder & Mead:
// minimum 0 at (1, 1), reached from the textbook start (-1.2, 1).
TEST(NelderMead, FollowsRosenbrocksValley) {
  auto f = [](const std::vector<double>& x) { return 100 * std::pow(x[1] - x[0] * x[0], 2) + std::pow(1 - x[0], 2); };
  NelderMeadOptions o;
  o.max_evaluations = 2000;
  o.tolerance = 1e-14;
  o.initial_step = 0.5;
  const NelderMeadResult r = nelder_mead(f, {-1.2, 1}, o);
  EXPECT_NEAR(r.x[0], 1, 1e-3);
  EXPECT_NEAR(r.x[1], 1, 2e-3);
  EXPECT_LT(r.value, 1e-6);
}

TEST(NelderMead, StopsAtTheEvaluationBudget) {
  int calls = 0;
  auto f = [&](const std::vector<double>& x) {
    ++calls;
    return std::abs(x[0]) + std::abs(x[1]) + std::abs(x[2]);
  };
  NelderMeadOptions o;
  o.max_evaluations = 30;
  o.tolerance = 0;
  const NelderMeadResult r = nelder_mead(f, {5, 5, 5}, o);
  EXPECT_EQ(r.evaluations, calls);
  EXPECT_LE(calls, 30 + 3 + 2);  // the last step may overrun: reflect, contract, shrink n
  EXPECT_LT(r.value, 15);    // it made progress from f(start) = 15
}

}  // namespace
}  // namespace twinsim
