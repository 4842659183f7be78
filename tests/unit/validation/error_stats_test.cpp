// Error summaries against values worked by hand (and numpy.percentile's "linear" rule).
#include <gtest/gtest.h>

#include "sim/validate/error_stats.hpp"

namespace twinsim {
namespace {

TEST(ErrorStats, PercentileInterpolatesLikeNumpy) {
  // numpy.percentile([1, 2, 3, 4], 90) = 3.7; 50 -> 2.5
  EXPECT_NEAR(percentile({4, 1, 3, 2}, 0.9), 3.7, 1e-12);
  EXPECT_NEAR(percentile({4, 1, 3, 2}, 0.5), 2.5, 1e-12);
  EXPECT_NEAR(percentile({7}, 0.9), 7, 1e-12);
  EXPECT_THROW(percentile({}, 0.5), std::invalid_argument);
  EXPECT_THROW(percentile({1, 2}, 1.5), std::invalid_argument);
}

TEST(ErrorStats, SummaryOfSignedErrors) {
  // errors -0.1, +0.2, +0.05, -0.3: absolute 0.05 0.1 0.2 0.3
  const ErrorSummary s = summarize({-0.1, 0.2, 0.05, -0.3});
  EXPECT_EQ(s.count, 4);
  EXPECT_NEAR(s.median, 0.15, 1e-12);
  EXPECT_NEAR(s.mean, 0.1625, 1e-12);
  EXPECT_NEAR(s.p90, 0.27, 1e-12);  // rank 2.7: 0.2 + 0.7 * 0.1
  EXPECT_NEAR(s.max, 0.3, 1e-12);
  EXPECT_NEAR(s.mean_signed, -0.0375, 1e-12);
  EXPECT_NEAR(relative_error(110, 100), 0.1, 1e-12);
  EXPECT_NEAR(relative_error(90, 100), 0.1, 1e-12);
}

TEST(ErrorStats, GroupsByLabel) {
  const auto g = summarize_by({0.1, -0.2, 0.3}, {"2", "8", "2"});
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(g.at("2").count, 2);
  EXPECT_NEAR(g.at("2").mean, 0.2, 1e-12);
  EXPECT_NEAR(g.at("8").median, 0.2, 1e-12);
  EXPECT_THROW(summarize_by({0.1}, {}), std::invalid_argument);
}

}  // namespace
}  // namespace twinsim
