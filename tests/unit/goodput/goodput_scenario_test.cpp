// The `goodput:` section (SCENARIO.md): what the loader accepts and refuses, and what the
// checkpoint of a plan weighs.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "models/param_count.hpp"
#include "scenario/load.hpp"
#include "sim/goodput/checkpoint.hpp"
#include "sim/goodput/goodput.hpp"
#include "sim/report/report.hpp"
#include "tests/unit/goodput/llama8b_scenario.hpp"

namespace twinsim {
namespace {

using test::kLlama8b;

Scenario with(const std::vector<std::string>& sets) { return load_scenario_text(kLlama8b, sets); }

std::string refusal(const std::vector<std::string>& sets) {
  try {
    with(sets);
  } catch (const ScenarioError& e) {
    return e.what();
  }
  return "";
}

TEST(GoodputScenario, ReadsAPublishedSetAndItsOverrides) {
  const Scenario s = with({"goodput.failures.preset=llama3-h100", "goodput.failures.gpu_per_million_hours.gpu_hbm=10",
                           "goodput.failures.job_per_day.cosmic_rays=0.5", "goodput.storage_write_GBps=100",
                           "goodput.restart_minutes=5", "goodput.async_checkpoint=false"});
  ASSERT_TRUE(s.goodput.has_value());
  const GoodputSpec& g = *s.goodput;
  EXPECT_EQ(g.failures.name, "llama3-h100");
  EXPECT_DOUBLE_EQ(g.storage_write_Bps, 100e9);
  EXPECT_DOUBLE_EQ(g.storage_read_Bps, 100e9);  // the write's when not given
  EXPECT_DOUBLE_EQ(g.restart_s, 300);
  EXPECT_FALSE(g.async_checkpoint);
  int hbm = 0, cosmic = 0;
  for (const ComponentFailureRate& c : g.failures.components) {
    if (c.component == "gpu_hbm") {
      ++hbm;
      EXPECT_DOUBLE_EQ(c.per_hour, 10e-6);
    }
    if (c.component == "cosmic_rays") {
      ++cosmic;
      EXPECT_DOUBLE_EQ(c.per_hour, 0.5 / 24);
    }
  }
  EXPECT_EQ(hbm, 1);     // replaced, not added
  EXPECT_EQ(cosmic, 1);  // added
}

TEST(GoodputScenario, RefusesWhatItCannotPrice) {
  EXPECT_NE(refusal({"goodput.failures=llama3-h10"}).find("did you mean 'llama3-h100'"), std::string::npos);
  EXPECT_NE(refusal({"goodput.failures=llama3-h100", "goodput.restart_minute=5"}).find("goodput.restart_minute"),
            std::string::npos);
  EXPECT_NE(refusal({"goodput.restart_minutes=5"}).find("goodput.failures: is required"), std::string::npos);
  EXPECT_NE(refusal({"goodput.failures=llama3-h100", "goodput.price_per_gpu_hour=2"}).find("goodput.train_tokens"),
            std::string::npos);
  EXPECT_NE(refusal({"goodput.failures.gpu_per_million_hours.gpu=-1"}).find("goodput.failures.gpu_per_million_hours.gpu"),
            std::string::npos);
  const char* inference = R"(
model: llama3-8b
cluster: dgx-h100
inference: {prompt_len: 128}
plan: {tp: 1}
goodput: {failures: llama3-h100}
)";
  try {
    load_scenario_text(inference);
    ADD_FAILURE() << "a goodput section on an inference scenario was accepted";
  } catch (const ScenarioError& e) {
    EXPECT_EQ(e.key, "goodput");
  }
}

TEST(GoodputScenario, CheckpointHoldsWeightsAndOptimizerOncePerParameter) {
  const Scenario s = with({"goodput.failures=llama3-h100", "goodput.storage_write_GBps=50", "goodput.storage_read_GBps=100"});
  const double params = static_cast<double>(count_params(s.model).total);
  // bf16 + Adam: 2 bytes of weights, 12 of fp32 master, m and v (ZeRO paper §3.1)
  const CheckpointCost c = checkpoint_cost(s, *s.goodput);
  EXPECT_DOUBLE_EQ(c.bytes, 14 * params);
  EXPECT_DOUBLE_EQ(c.shard_bytes, 14 * params / 64);
  EXPECT_DOUBLE_EQ(c.write_s, 14 * params / 50e9);
  EXPECT_DOUBLE_EQ(c.read_s, 14 * params / 100e9);
  // asynchronous: the stall is one GPU's shard over the DGX H100's 52 GB/s device-to-host
  EXPECT_DOUBLE_EQ(c.blocking_s, 14 * params / 64 / 52e9);
  // fp32 + Adam: 4 + 8; SGD under bf16: 2 + fp32 master 4 + momentum 4
  EXPECT_DOUBLE_EQ(checkpoint_bytes(with({"training.precision=fp32"})), 12 * params);
  EXPECT_DOUBLE_EQ(checkpoint_bytes(with({"training.optimizer=sgd"})), 10 * params);
  // synchronous: the stall is the write
  const Scenario sync = with({"goodput.failures=llama3-h100", "goodput.storage_write_GBps=50", "goodput.async_checkpoint=false"});
  EXPECT_DOUBLE_EQ(checkpoint_cost(sync, *sync.goodput).blocking_s, 14 * params / 50e9);
}

TEST(GoodputScenario, SimulateReportCarriesTheSection) {
  const Scenario s = with({"goodput.failures=llama3-h100", "goodput.train_tokens=1e11", "goodput.price_per_gpu_hour=2"});
  const nlohmann::json report = simulate_report(s);
  ASSERT_TRUE(report.contains("goodput"));
  const nlohmann::json& g = report["goodput"];
  const double step_s = report["time"]["step_s"].get<double>();
  // 1e11 tokens / (64 x 8192) a step = 190,735 steps (rounded up)
  EXPECT_EQ(g["time_to_train"]["steps"].get<std::int64_t>(), 190735);
  EXPECT_NEAR(g["time_to_train"]["failure_free_days"].get<double>(), 190735 * step_s / 86400, 1e-9);
  const double ettr = g["ettr"].get<double>();
  EXPECT_GT(ettr, 0.5);
  EXPECT_LT(ettr, 1.0);
  EXPECT_NEAR(g["time_to_train"]["days"].get<double>(), 190735 * step_s / 86400 / ettr, 1e-9);
  // the default storage: Llama 3's 2 TB/s over 16,384 GPUs, times these 64
  EXPECT_NEAR(g["checkpoint"]["storage_write_GBps"].get<double>(), 2000.0 / 16384 * 64, 1e-9);
  // and no section without the key
  EXPECT_FALSE(simulate_report(with({})).contains("goodput"));
}

}  // namespace
}  // namespace twinsim
