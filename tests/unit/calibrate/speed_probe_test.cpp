// calibrate/speed_probe: the probe times real kernels, survives the raw points' JSON, and
// says "slower" when the machine is.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include "calibrate/calibration.hpp"
#include "calibrate/speed_probe.hpp"

namespace twinsim::calibrate {
namespace {

SpeedProbe probe_of(double gemm_s, double memory_s) {
  SpeedProbe p;
  p.gemm_s = stats_of({gemm_s * 0.98, gemm_s, gemm_s * 1.05});
  p.memory_s = stats_of({memory_s, memory_s * 1.01, memory_s * 1.2});
  p.busy_processes = 2;
  return p;
}

TEST(SpeedProbe, RelativeSpeedIsCalibrationTimeOverNow) {
  const SpeedProbe then = probe_of(1e-3, 4e-3), now = probe_of(1.25e-3, 2e-3);
  const RelativeSpeed s = relative_speed(now, then);
  EXPECT_NEAR(s.gemm, 0.8, 1e-12);    // GEMM 25% slower now
  EXPECT_NEAR(s.memory, 2.0, 1e-12);  // memory twice as fast now
}

TEST(SpeedProbe, KeptInTheCalibrationsRawPoints) {
  Calibration c;
  EXPECT_FALSE(recorded_speed_probe(points_json(c)).has_value());  // calibrations before the probe
  c.speed_probe = probe_of(1e-3, 4e-3);
  const std::optional<SpeedProbe> back = recorded_speed_probe(points_json(c));
  ASSERT_TRUE(back.has_value());
  EXPECT_DOUBLE_EQ(back->gemm_s.median, 1e-3);
  EXPECT_DOUBLE_EQ(back->memory_s.max, 4.8e-3);
  EXPECT_EQ(back->busy_processes, 2);
  nlohmann::json broken = points_json(c);
  broken["speed_probe"].erase("memory");
  EXPECT_THROW(recorded_speed_probe(broken), nlohmann::json::exception);
}

TEST(SpeedProbe, TimesTheKernelsWithACoRunnerAndReapsIt) {
  const SpeedProbe p = measure_speed_probe(2, 2, 0.005);
  // 2 x 256 x 256 x 768 FLOPs cannot take under 0.1 ms on a core (< 1 TFLOP/s fp32), nor
  // 12 MiB of swiglu traffic under 12 us (< 1 TB/s)
  EXPECT_GT(p.gemm_s.median, 1e-4);
  EXPECT_GT(p.memory_s.median, 1.2e-5);
  EXPECT_EQ(p.gemm_s.repeats, 2);
  EXPECT_EQ(p.busy_processes, 2);
  EXPECT_EQ(waitpid(-1, nullptr, WNOHANG), -1);  // no child left behind
}

}  // namespace
}  // namespace twinsim::calibrate
