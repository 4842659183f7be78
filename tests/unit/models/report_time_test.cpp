// The report's time section (models/report_time.hpp): each side's keys written and read back
// whole, an older report's missing breakdown key read as 0, a missing step_s and a key that
// is not a number refused naming them.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "models/report_time.hpp"
#include "tests/unit/models/refusal.hpp"

namespace twinsim {
namespace {

TEST(ReportTime, PredictedSideRoundTrips) {
  TimeSection t;
  t.step_s = 2.5;
  t.breakdown = TimeBreakdown{1.5, 0.25, 0.125, 0, 0, 0.5, 0.0625, 0, 0.0625};
  t.reported_stage = 3;
  t.simulated_gpus = 16;
  t.gemm_clock = 0.9;
  t.extrapolated_ops = {"attn.qkv.fwd"};
  nlohmann::json j = {{"ops", nlohmann::json::array()}};  // the simulator's detail stays beside
  write_time_section(j, t);
  EXPECT_EQ(j["breakdown"].size(), 9u);
  EXPECT_EQ(j["breakdown"]["optimizer_s"], 0.5);
  EXPECT_FALSE(j.contains("steps_s"));
  const TimeSection back = read_time_section(j, "simulated");
  nlohmann::json again = {{"ops", nlohmann::json::array()}};
  write_time_section(again, back);
  EXPECT_EQ(again, j);
}

TEST(ReportTime, MeasuredSideRoundTrips) {
  TimeSection t;
  t.step_s = 0.75;
  t.steps_s = {1.5, 0.75, 0.8};
  t.warmup_steps = 1;
  nlohmann::json j;
  write_time_section(j, t);
  EXPECT_EQ(j, (nlohmann::json{{"step_s", 0.75}, {"steps_s", {1.5, 0.75, 0.8}}, {"warmup_steps", 1}}));
  const TimeSection back = read_time_section(j, "measured");
  EXPECT_FALSE(back.breakdown.has_value());
  EXPECT_EQ(back.steps_s, t.steps_s);
  EXPECT_EQ(back.warmup_steps, 1);
}

TEST(ReportTime, OlderBreakdownsReadAndBrokenOnesAreRefused) {
  // a report from before offload_exposed_s: the key reads 0
  const nlohmann::json old = {{"step_s", 1.0}, {"breakdown", {{"compute_s", 0.75}, {"pp_bubble_s", 0.25}}}};
  const TimeSection t = read_time_section(old, "simulated");
  EXPECT_EQ(t.breakdown->compute_s, 0.75);
  EXPECT_EQ(t.breakdown->offload_exposed_s, 0);
  std::string message = test::refusal([] { read_time_section(nlohmann::json{{"breakdown", nlohmann::json::object()}}, "measured"); });
  EXPECT_NE(message.find("measured report: time.step_s"), std::string::npos) << message;
  nlohmann::json broken = old;
  broken["breakdown"]["tp_comm_s"] = "fast";
  message = test::refusal([&] { read_time_section(broken, "simulated"); });
  EXPECT_NE(message.find("simulated report: time.breakdown.tp_comm_s"), std::string::npos) << message;
}

}  // namespace
}  // namespace twinsim
