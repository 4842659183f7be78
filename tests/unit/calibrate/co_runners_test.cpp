// calibrate/co_runners: the timing process stands for rank 0, pinned to the first core as
// mpirun binds rank 0 of a timing case, and gets its CPUs back afterwards.
#include <gtest/gtest.h>

#include <sched.h>
#include <unistd.h>

#include "calibrate/co_runners.hpp"

namespace twinsim::calibrate {
namespace {

std::vector<int> my_cpus() {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  sched_getaffinity(0, sizeof mask, &mask);
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &mask)) cpus.push_back(c);
  return cpus;
}

TEST(CoRunners, PinsThisProcessToTheFirstCoreWhileTheyRun) {
  const std::vector<int> before = my_cpus();
  if (before.size() < 2) GTEST_SKIP() << "one CPU: nothing to pin";
  {
    const CoRunners others(2, [] { pause(); });
    EXPECT_EQ(my_cpus(), std::vector<int>{before.front()});
  }
  EXPECT_EQ(my_cpus(), before);
}

TEST(CoRunners, MoreProcessesThanCoresStayUnpinned) {
  const std::vector<int> before = my_cpus();
  {
    const CoRunners others(static_cast<int>(before.size()) + 1, [] { pause(); });
    EXPECT_EQ(my_cpus(), before);  // as mpirun leaves oversubscribed ranks unbound
  }
  EXPECT_EQ(my_cpus(), before);
}

}  // namespace
}  // namespace twinsim::calibrate
