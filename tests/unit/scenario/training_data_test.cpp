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
  std::ofstream(dir / "tokens.bin", std::ios::binary) << std::string(8, '\\0');
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
