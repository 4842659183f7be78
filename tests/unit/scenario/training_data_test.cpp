// training.data: a token file for the executor, its path taken from the scenario's folder.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "scenario/errors.hpp"
#include "scenario/load.hpp"

namespace twinsim {
namespace {

TEST(TrainingData, PathBesideTheScenarioAndDtype) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("twinsim_data_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "tokens.bin", std::ios::binary) << std::string(8, '\0');
  std::ofstream(dir / "run.yaml") << "model: tiny-gpt\ncluster: host\nplan: {tp: 1}\n"
                                     "training: {seq_len: 16, global_batch: 2, data: {path: tokens.bin, dtype: uint32}}\n";
  const Scenario s = load_scenario_file((dir / "run.yaml").string());
  EXPECT_EQ(s.training->data.path, (dir / "tokens.bin").string());
  EXPECT_EQ(s.training->data.token_bytes, 4);
  const std::string base = "model: tiny-gpt\ncluster: host\nplan: {tp: 1}\n";
  EXPECT_EQ(load_scenario_text(base + "training: {seq_len: 16, global_batch: 2}\n").training->data.path, "");
  EXPECT_THROW(load_scenario_text(base + "training: {seq_len: 16, global_batch: 2, data: {path: t.bin, dtype: int8}}\n"),
               ScenarioError);
  EXPECT_THROW(load_scenario_text(base + "training: {seq_len: 16, global_batch: 2, data: {dtype: uint16}}\n"),
               ScenarioError);
  EXPECT_THROW(load_scenario_text(base + "training: {seq_len: 16, global_batch: 2, data: {path: t.bin, shuffle: true}}\n"),
               ScenarioError);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace twinsim

namespace twinsim {
namespace {

TEST(TrainingOptimizer, MappingFormAndSchedule) {
  const std::string base = "model: tiny-gpt\ncluster: host\nplan: {tp: 1}\ntraining: {seq_len: 16, global_batch: 2, ";
  const Scenario s = load_scenario_text(
      base + "optimizer: {name: adamw, lr: 3e-4, beta2: 0.95, grad_clip: 1.0, weight_decay: 0.1,"
             " schedule: {warmup_steps: 10, decay: cosine, decay_steps: 90, min_lr: 3e-5}}}\n");
  const OptimizerSettings& o = s.training->optim;
  EXPECT_EQ(s.training->optimizer, Optimizer::adam);
  EXPECT_DOUBLE_EQ(o.beta2, 0.95);
  EXPECT_DOUBLE_EQ(o.grad_clip, 1.0);
  // warm-up: step 0 at 1/10 of the peak, step 9 at the peak; cosine: half way (step 10 + 45)
  // at the mean of peak and floor; the floor from step 100 on
  EXPECT_DOUBLE_EQ(o.lr_at(0), 3e-5);
  EXPECT_DOUBLE_EQ(o.lr_at(9), 3e-4);
  EXPECT_NEAR(o.lr_at(55), (3e-4 + 3e-5) / 2, 1e-15);
  EXPECT_DOUBLE_EQ(o.lr_at(100), 3e-5);
  EXPECT_DOUBLE_EQ(o.lr_at(5000), 3e-5);
  // the plain names keep working; "adamw" names what "adam" runs
  EXPECT_EQ(load_scenario_text(base + "optimizer: sgd}\n").training->optimizer, Optimizer::sgd);
  EXPECT_EQ(load_scenario_text(base + "optimizer: adamw}\n").training->optimizer, Optimizer::adam);
  // refused, naming the key: a decay without its length, a floor above the peak, a typo
  EXPECT_THROW(load_scenario_text(base + "optimizer: {schedule: {decay: linear}}}\n"), ScenarioError);
  EXPECT_THROW(load_scenario_text(base + "optimizer: {lr: 1e-4, schedule: {min_lr: 1e-3}}}\n"), ScenarioError);
  EXPECT_THROW(load_scenario_text(base + "optimizer: {name: adamw, gradclip: 1}}\n"), ScenarioError);
}

}  // namespace
}  // namespace twinsim
