// The reports' op tables (models/report_ops.hpp): predicted lists and measured maps written
// and read back whole, a whole count written as an integer, and broken rows refused naming
// the key.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "models/report_ops.hpp"
#include "tests/unit/models/refusal.hpp"

namespace twinsim {
namespace {

TEST(ReportOps, PredictedListRoundTrips) {
  const std::vector<PredictedOp> ops = {{"attn.qkv.fwd", 0.002, 80, false, 1.5e9, 1},
                                        {"head.logits.fwd", 0.001, 2.5, {}, {}, {}}};
  const nlohmann::json j = to_json(ops);
  EXPECT_TRUE(j[0]["count"].is_number_integer());  // 80 calls, as a training step wrote them
  EXPECT_TRUE(j[1]["count"].is_number_float());
  EXPECT_FALSE(j[1].contains("launches"));
  const std::vector<PredictedOp> back = read_predicted_ops(j, "simulated report: time.ops");
  EXPECT_EQ(to_json(back), j);
  EXPECT_EQ(back[0].launches, 1);
  nlohmann::json broken = j;
  broken[1].erase("time_s");
  const std::string message = test::refusal([&] { read_predicted_ops(broken, "simulated report: time.ops"); });
  EXPECT_NE(message.find("simulated report: time.ops[].time_s"), std::string::npos) << message;
}

TEST(ReportOps, MeasuredMapsRoundTripPerStepAndPerPass) {
  const MeasuredOps ops = {{"layer0.attn.qkv.fwd", {2, 0.004, 0.005}}, {"optimizer.step", {1, 0.1, 0.12}}};
  const nlohmann::json step = to_json(ops, OpUnit::step), pass = to_json(ops, OpUnit::pass);
  EXPECT_EQ(step["optimizer.step"]["mean_s_per_step"], 0.1);
  EXPECT_EQ(pass["optimizer.step"]["count_per_pass"], 1);
  EXPECT_EQ(to_json(read_measured_ops(step, OpUnit::step, "measured report: ops"), OpUnit::step), step);
  // a map of passes is not a map of steps: its keys are refused, named
  const std::string message = test::refusal([&] { read_measured_ops(pass, OpUnit::step, "measured report: ops"); });
  EXPECT_NE(message.find("count_per_step"), std::string::npos) << message;
}

}  // namespace
}  // namespace twinsim
