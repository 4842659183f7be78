// The goodput model's formulas against numbers worked by hand (sim/goodput/README.md).
#include <gtest/gtest.h>

#include <cmath>

#include "hardware/failure_rates.hpp"
#include "sim/goodput/goodput.hpp"

namespace twinsim {
namespace {

TEST(Goodput, InterruptionRateSumsComponentsTimesTheirUnits) {
  FailureRates r;
  r.components = {{"gpu_part", FailureScope::gpu, 1e-5},
                  {"hbm", FailureScope::gpu, 2e-5},
                  {"nic", FailureScope::node, 1e-4},
                  {"bug", FailureScope::job, 0.01}};
  // 3e-5 x 800 GPUs + 1e-4 x 100 nodes + 0.01 = 0.024 + 0.01 + 0.01
  EXPECT_NEAR(interruptions_per_hour(r, 800, 100), 0.044, 1e-12);
}

TEST(Goodput, Llama3RatesGiveBackTable5sCountsOnItsOwnCluster) {
  // a units check, not a judge: the set is Table 5's counts over 16,384 GPUs, 2,048 nodes
  // and 54 days, so the round trip must give 419 (and 47 planned) back
  const FailureRates r = *published_failure_rates("llama3-h100");
  const double hours = 54 * 24;
  EXPECT_NEAR(interruptions_per_hour(r, 16384, 2048) * hours, 419, 1e-9);
  EXPECT_NEAR(r.planned_per_hour * hours, 47, 1e-9);
  // GPU parts are 268 of them: on half the GPUs and the same nodes, 134 fewer
  EXPECT_NEAR(interruptions_per_hour(r, 8192, 2048) * hours, 419 - 134, 1e-9);
  EXPECT_FALSE(published_failure_rates("llama3-h10").has_value());
}

TEST(Goodput, YoungDalyIntervalByHand) {
  // delta 60 s, M 3600 s: sqrt(2 x 60 x 3600) = 657.267; x = 60 / 7200 = 1/120;
  // 657.267 x (1 + sqrt(1/120)/3 + 1/1080) - 60 = 657.267 x 1.031355 - 60 = 617.876
  EXPECT_NEAR(young_daly_interval_s(60, 3600), 617.876, 1e-3);
  // a checkpoint costing more than twice the MTBF: checkpoint every MTBF (Daly eq. 37)
  EXPECT_DOUBLE_EQ(young_daly_interval_s(8000, 3600), 3600);
  // without failures there is no optimum to find
  EXPECT_DOUBLE_EQ(young_daly_interval_s(60, 0), 0);
}

TEST(Goodput, SynchronousCheckpointSharesByHand) {
  GoodputInputs in;
  in.failure_rate_per_s = 1.0 / 3600;  // one failure an hour
  in.checkpoint_blocking_s = 60;       // synchronous: the stall is the write
  in.checkpoint_write_s = 60;
  in.async_checkpoint = false;
  in.restart_s = 600, in.read_s = 60;
  in.interval_s = 530;  // 8.83 steps of 60 s: rounded to 9, 540 s
  in.step_s = 60;
  const GoodputPrediction g = predict_goodput(in);
  EXPECT_EQ(g.interval_steps, 9);
  EXPECT_FALSE(g.interval_optimal);
  // segment 540 + 60 = 600 s; lost 300 s, recovery 660 s a failure;
  // lost 300/3600, recovery 660/3600, running 1 - 960/3600 = 0.73333, training 0.9 of it
  EXPECT_NEAR(g.lost_work_s, 300, 1e-9);
  EXPECT_NEAR(g.recovery_s, 660, 1e-9);
  EXPECT_NEAR(g.lost_work_share, 300.0 / 3600, 1e-12);
  EXPECT_NEAR(g.recovery_share, 660.0 / 3600, 1e-12);
  EXPECT_NEAR(g.ettr, 0.66, 1e-12);
  EXPECT_NEAR(g.checkpoint_share, 0.0733333333, 1e-9);
  EXPECT_NEAR(g.ettr + g.checkpoint_share + g.lost_work_share + g.recovery_share, 1, 1e-12);
}

TEST(Goodput, AsynchronousCheckpointLosesTheUnwrittenOneToo) {
  GoodputInputs in;
  in.failure_rate_per_s = 1.0 / 7200;
  in.checkpoint_blocking_s = 2;   // the copy to host memory
  in.checkpoint_write_s = 300;    // durable five minutes later
  in.async_checkpoint = true;
  in.restart_s = 300;
  in.step_s = 10;
  const GoodputPrediction g = predict_goodput(in);
  // Daly with delta 2, M 7200: sqrt(28800) = 169.7 (x 1.0059, - 2 = 168.7) is shorter than
  // the write, so a checkpoint every 300 s, 30 steps
  EXPECT_TRUE(g.interval_optimal);
  EXPECT_EQ(g.interval_steps, 30);
  // lost: half of 302 s plus the 300 s the newest one takes to land
  EXPECT_NEAR(g.lost_work_s, 151 + 300, 1e-9);
  const double running = 1 - (451.0 + 300.0) / 7200;
  EXPECT_NEAR(g.ettr, running * 300 / 302, 1e-12);
}

TEST(Goodput, PlannedInterruptionsCostARecoveryButNoWork) {
  GoodputInputs in;
  in.planned_rate_per_s = 1.0 / 86400;  // one a day, nothing fails
  in.restart_s = 864;                   // 1% of a day
  in.step_s = 5;
  const GoodputPrediction g = predict_goodput(in);
  EXPECT_EQ(g.interval_steps, 0);  // nothing to checkpoint against
  EXPECT_NEAR(g.ettr, 0.99, 1e-12);
}

TEST(Goodput, FailuresFasterThanRecoveryNeverFinish) {
  GoodputInputs in;
  in.failure_rate_per_s = 1.0 / 600;  // every 10 minutes
  in.restart_s = 900;                 // 15 minutes to come back
  in.step_s = 1;
  const GoodputPrediction g = predict_goodput(in);
  EXPECT_EQ(g.ettr, 0);
  EXPECT_NEAR(g.lost_work_share + g.recovery_share, 1, 1e-12);
  EXPECT_FALSE(time_to_train(g, in, 3600, 8, 2).finishes);
}

TEST(Goodput, TimeToTrainStretchesByTheGoodput) {
  GoodputInputs in;
  in.failure_rate_per_s = 2.0 / 86400;  // two a day
  GoodputPrediction g;
  g.ettr = 0.8;
  // 100 h of steps at 80%: 125 h on 64 GPUs, 250/24 interruptions, 25 h x 64 lost
  const TimeToTrain t = time_to_train(g, in, 100 * 3600.0, 64, 2.0);
  EXPECT_NEAR(t.wall_s, 125 * 3600.0, 1e-6);
  EXPECT_NEAR(t.interruptions, 125.0 / 12, 1e-9);
  EXPECT_NEAR(t.gpu_hours, 8000, 1e-9);
  EXPECT_NEAR(t.failure_gpu_hours, 1600, 1e-9);
  EXPECT_NEAR(t.cost, 16000, 1e-9);
  EXPECT_NEAR(t.failure_cost, 3200, 1e-9);
}

}  // namespace
}  // namespace twinsim
