// The executor's host time per op (calibrate/op_host.hpp, issue 61).
#include <gtest/gtest.h>

#include "calibrate/op_host.hpp"

namespace twinsim::calibrate {
namespace {

TEST(OpHost, TimesEveryRepeatOfEmptyOpScopes) {
  const Stats s = op_host_time(5, 512);
  EXPECT_EQ(s.repeats, 5);
  EXPECT_LE(s.min, s.median);
  EXPECT_LE(s.median, s.max);
  // each op names itself (two strings), beats the watchdog and is recorded: more than nothing,
  // and far less than a kernel call of the smallest decode (2-10 us on the 2-vCPU EPYC)
  EXPECT_GT(s.min, 0.0);
  EXPECT_LT(s.median, 20e-6);
}

}  // namespace
}  // namespace twinsim::calibrate
