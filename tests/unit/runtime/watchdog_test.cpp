// The rank watchdog (exec/runtime/watchdog.hpp): silence past the timeout ends the process
// with its message and status 3; progress keeps it alive; 0 turns it off.
#include "exec/runtime/watchdog.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <limits>
#include <stdexcept>
#include <thread>

namespace twinsim::exec {
namespace {

using namespace std::chrono_literals;

TEST(WatchdogDeathTest, SilencePastTheTimeoutEndsTheProcessNamingRankStepAndOp) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        Watchdog w(7, 0.2);
        watchdog_step(4);
        watchdog_progress("layer1.attn.core.fwd");
        std::this_thread::sleep_for(5s);  // a peer that never answers
      },
      ::testing::ExitedWithCode(3),
      R"(rank 7: no progress for 0\.2 s in step 4 \(last op begun: layer1\.attn\.core\.fwd\): another rank is dead or stalled)");
}

TEST(Watchdog, ProgressKeepsItQuietAndItStopsWithItsScope) {
  {
    // 3 s in all, one and a half timeouts, a beat every 30 ms (a loaded machine may delay
    // one by far more than 30 ms, not by two seconds)
    Watchdog w(0, 2.0);
    for (int i = 0; i < 100; ++i) {
      watchdog_progress("op");
      std::this_thread::sleep_for(30ms);
    }
  }
  std::this_thread::sleep_for(2200ms);  // past the timeout with no watchdog left: still alive
  SUCCEED();
}

TEST(Watchdog, ZeroWatchesNothingAndNonFiniteIsRefused) {
  {
    Watchdog off(0, 0);
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_THROW(Watchdog(0, std::numeric_limits<double>::quiet_NaN()), std::invalid_argument);
}

}  // namespace
}  // namespace twinsim::exec
