// The CPU others took while a validation case ran (calibrate/cpu_share): /proc/stat's line
// read by hand-made text, and the interval's arithmetic on hand-picked readings.
#include "calibrate/cpu_share.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

namespace twinsim::calibrate {
namespace {

TEST(CpuShare, ProcStatBusyIsUserNiceSystemIrqSoftirqAndStealItsOwn) {
  // user 100, nice 20, system 30, idle 400, iowait 5, irq 6, softirq 7, steal 8 (ticks of 1/100 s):
  // busy (100 + 20 + 30 + 6 + 7) / 100 = 1.63 s; idle and iowait are not busy; steal 0.08 s
  const CpuSeconds t = parse_proc_stat("cpu  100 20 30 400 5 6 7 8 0 0\ncpu0 50 10 15 200 2 3 3 4 0 0\n", 100);
  EXPECT_DOUBLE_EQ(t.busy, 1.63);
  EXPECT_DOUBLE_EQ(t.steal, 0.08);
  // a kernel before steal was counted (2.6.11) has seven fields: no steal
  EXPECT_DOUBLE_EQ(parse_proc_stat("cpu 100 20 30 400 5 6 7\n", 100).steal, 0.0);
  EXPECT_THROW(parse_proc_stat("intr 1 2 3\n", 100), std::runtime_error);
  EXPECT_THROW(parse_proc_stat("cpu 1 2\n", 100), std::runtime_error);
}

TEST(CpuShare, OthersAreTheMachinesBusyTimeLessOursOverTheWallTime) {
  // 2 s of wall time: the machine was busy 4.0 s more, 3.0 s of it our ranks': others 0.5 core;
  // the hypervisor stole 0.2 s: 0.1 core
  const OtherCpuUse u = other_cpu_use({10.0, 1.0}, {14.0, 1.2}, 3.0, 2.0);
  EXPECT_DOUBLE_EQ(u.other_cores, 0.5);
  EXPECT_NEAR(u.steal_cores, 0.1, 1e-12);
  EXPECT_NEAR(u.total(), 0.6, 1e-12);
  // our children's time rounds differently from the machine's ticks: never below none
  EXPECT_DOUBLE_EQ(other_cpu_use({10.0, 1.0}, {12.99, 1.0}, 3.0, 2.0).other_cores, 0.0);
  EXPECT_DOUBLE_EQ(other_cpu_use({10.0, 1.0}, {14.0, 1.2}, 3.0, 0.0).total(), 0.0);
}

}  // namespace
}  // namespace twinsim::calibrate
