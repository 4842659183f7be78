// Every ready scenario under scenarios/training loads and simulates: they are examples
// users copy, so they must stay valid as the code changes.
#include <gtest/gtest.h>

#include <filesystem>

#include "scenario/load.hpp"
#include "sim/memory/memory_report.hpp"
#include "sim/training/training_report.hpp"

namespace twinsim {
namespace {

TEST(ReadyScenarios, EveryTrainingScenarioSimulates) {
  int count = 0;
  const std::filesystem::path folder = std::filesystem::path(TWINSIM_SOURCE_DIR) / "scenarios" / "training";
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    const Scenario s = load_scenario_file(entry.path().string());
    const TrainingPrediction p = predict_training(s);
    EXPECT_GT(p.step_s, 0.0) << entry.path();
    EXPECT_GT(p.throughput.mfu, 0.05) << entry.path();
    EXPECT_LT(p.throughput.mfu, 0.9) << entry.path();
    EXPECT_TRUE(predict_memory(s).fits) << entry.path();
    ++count;
  }
  EXPECT_GE(count, 4);
}

}  // namespace
}  // namespace twinsim
