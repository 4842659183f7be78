// The trust interval where users meet it: simulate's report (JSON and table), a prediction
// outside every validated regime saying so in its first lines, and capacity sized at the
// interval's slow end.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "scenario/default_stack.hpp"
#include "scenario/load.hpp"
#include "sim/report/report.hpp"
#include "sim/search/candidate.hpp"
#include "sim/search/capacity.hpp"

namespace twinsim {
namespace {

const std::string kScenarios = std::string(TWINSIM_SOURCE_DIR) + "/scenarios/";

std::string first_lines(const std::string& text, int n) {
  std::istringstream in(text);
  std::string out, line;
  for (int i = 0; i < n && std::getline(in, line); ++i) out += line + "\n";
  return out;
}

TEST(ReportInterval, AValidatedRegimesStepCarriesItsIntervalAndBasis) {
  // Narayanan's 3.6B row: A100, megatron-2021, whose other held-out rows make the regime
  const Scenario s = load_scenario_file(kScenarios + "validation/training/narayanan2021-table1-3.6b.yaml");
  const nlohmann::json r = simulate_report(s);
  const double step = r["time"]["step_s"].get<double>();
  const auto interval = r["time"]["step_s_interval"].get<std::vector<double>>();
  const nlohmann::json& basis = r["time"]["interval_basis"];
  ASSERT_EQ(interval.size(), 2u);
  EXPECT_LT(interval[0], step);
  EXPECT_GT(interval[1], step);
  EXPECT_TRUE(basis["validated"].get<bool>());
  EXPECT_EQ(basis["regime"].get<std::string>(), "training a100 megatron-2021 dense");
  EXPECT_GE(basis["cases"].get<int>(), 5);
  EXPECT_DOUBLE_EQ(basis["coverage"].get<double>(), 0.8);
  std::ostringstream table;
  print_report(table, s, r);
  EXPECT_NE(table.str().find("80% interval of the step time"), std::string::npos);
  EXPECT_EQ(table.str().find("outside every validated regime"), std::string::npos);
}

TEST(ReportInterval, OutsideEveryValidatedRegimeSaysSoInItsFirstLinesAndWidens) {
  // no validation case trains on a B200 under torchtitan (Megatron-Core on a B200 has one since issue 60)
  const Scenario inside = load_scenario_file(kScenarios + "validation/training/mlengineering-llama31-8b-b200-long-context.yaml");
  const Scenario outside = load_scenario_file(kScenarios + "validation/training/mlengineering-llama31-8b-b200-long-context.yaml",
                                              {"stack=torchtitan-compile"});
  const nlohmann::json in = simulate_report(inside), out = simulate_report(outside);
  EXPECT_TRUE(in["time"]["interval_basis"]["validated"].get<bool>());
  const nlohmann::json& basis = out["time"]["interval_basis"];
  EXPECT_FALSE(basis["validated"].get<bool>());
  ASSERT_FALSE(basis["reasons"].empty());
  EXPECT_GT(basis["half_width"].get<double>(), in["time"]["interval_basis"]["half_width"].get<double>());
  std::ostringstream table;
  print_report(table, outside, out);
  EXPECT_NE(first_lines(table.str(), 3).find("outside every validated regime"), std::string::npos) << table.str();
}

TEST(ReportInterval, ServingReportsCarryTtftAndTpotIntervals) {
  const Scenario s = load_scenario_file(kScenarios + "validation/inference/lmdeploy-llama2-7b-a100-bs1.yaml");
  const nlohmann::json r = simulate_report(s);
  const nlohmann::json& inf = r["inference"];
  EXPECT_LT(inf["tpot_s_interval"][0].get<double>(), inf["tpot_s_interval"][1].get<double>());
  EXPECT_LT(inf["ttft_s_interval"][0].get<double>(), inf["ttft_s_interval"][1].get<double>());
  EXPECT_EQ(inf["interval_basis"]["regime"].get<std::string>().rfind("serving", 0), 0u);
}

TEST(CapacityInterval, TheSlowEndNeedsAtLeastTheGpusOfThePrediction) {
  CapacityRequest r;
  r.model = "llama3-8b";
  r.gpu = "h100-sxm";
  r.model_spec = catalog_model(r.model);
  r.node = catalog_cluster_for_gpu(r.gpu);
  r.tokens = 1e11;
  r.days = 6.5;  // the predicted plan takes 6.1 days on 16 GPUs: its slow end does not fit
  const CapacityPlan p = plan_capacity(r);
  ASSERT_TRUE(p.feasible);
  EXPECT_LT(p.step_s_interval[0], p.step_s);
  EXPECT_GT(p.step_s_interval[1], p.step_s);
  EXPECT_GT(p.gpus_at_slow_end, p.gpus);
  EXPECT_LE(p.days_at_slow_end, r.days);
  // priced as a scenario naming no stack is: on its plan's default, never the idealized `none`
  Plan chosen = p.scenario_plan;
  apply_to_plan(p.plan, chosen);
  EXPECT_EQ(p.stack, default_training_stack_name(chosen));
}

}  // namespace
}  // namespace twinsim
