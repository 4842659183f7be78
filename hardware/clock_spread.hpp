#pragma once
// GPUs of one model do not run at one speed (clocks under power and thermal limits, a slow
// node): a synchronous step runs at its slowest member's pace. With per-GPU speeds spread
// normally around their mean, the slowest of n lies z_n standard deviations below it, z_n
// the expected largest of n standard normal draws (an order statistic, tabulated by
// Tippett 1925 and Harter 1961).
#include <cstdint>

namespace twinsim {

// E[max] of n independent N(0, 1) draws: the integral of x n phi(x) Phi(x)^(n-1) (Simpson's
// rule); 0 for n <= 1.
double expected_max_standard_normal(std::int64_t n);

// How far the slowest of n GPUs runs behind the mean, as a fraction of the compute (what
// ClusterSpec::straggler holds): speeds N(1, spread), the slowest at 1 - spread z_n, so
// its time per unit of work is 1 / (1 - spread z_n) of the mean's.
double slowest_member_lag(double spread, std::int64_t n);

}  // namespace twinsim
