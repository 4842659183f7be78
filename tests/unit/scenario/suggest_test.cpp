// "did you mean" by catalog family, and hardware files named where a catalog name goes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "scenario/hardware_file.hpp"
#include "scenario/load.hpp"
#include "scenario/suggest.hpp"

namespace twinsim {
namespace {

TEST(DidYouMean, AFamilyNameSuggestsItsMembersNotTheClosestSpelling) {
  const std::vector<std::string> gpus = catalog_gpu_names();
  // "h100" is two edits from "b200" but names the h100 family (its SXM, PCIe and NVL boards)
  const std::string h100 = did_you_mean("h100", gpus);
  EXPECT_NE(h100.find("'h100-sxm'"), std::string::npos) << h100;
  EXPECT_NE(h100.find("'h100-pcie'"), std::string::npos) << h100;
  EXPECT_EQ(h100.find("b200"), std::string::npos) << h100;
  EXPECT_EQ(did_you_mean("a100", gpus), ", did you mean 'a100-sxm-40gb' or 'a100-sxm-80gb'?");
  EXPECT_EQ(did_you_mean("dgx-a100", catalog_node_names()), ", did you mean 'dgx-a100-40gb' or 'dgx-a100-80gb'?");
  // a misspelling still gets the closest name
  EXPECT_EQ(did_you_mean("a100-sxm-80", gpus), ", did you mean 'a100-sxm-80gb'?");
  EXPECT_EQ(did_you_mean("zzzz", gpus), "");
  try {
    catalog_gpu("h100");
    ADD_FAILURE() << "h100 is not a catalog name";
  } catch (const ScenarioError& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean 'h100-"), std::string::npos) << e.what();
  }
}

class HardwareFile : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(dir_);
    std::ofstream(dir_ / "node.yaml") << "gpu: h100-sxm\ngpus_per_node: 4\n";
  }
  void TearDown() override {
    set_host_cluster_file("");
    std::filesystem::remove_all(dir_);
  }
  std::string scenario(const std::string& cluster) const {
    return "model: gpt2-small\ncluster: " + cluster + "\nplan: {tp: 1}\ntraining: {seq_len: 128, global_batch: 4}\n";
  }
  std::filesystem::path dir_ = std::filesystem::temp_directory_path() / ("twinsim_hw_" + std::to_string(::getpid()));
};

TEST_F(HardwareFile, NamedInTheScenarioOrBySet) {
  const std::string file = (dir_ / "node.yaml").string();
  EXPECT_EQ(load_scenario_text(scenario(file)).cluster.gpus_per_node, 4);
  EXPECT_EQ(load_scenario_text(scenario("dgx-h100"), {"cluster=" + file}).cluster.gpus_per_node, 4);
  // beside the scenario file, by its relative name
  std::ofstream(dir_ / "run.yaml") << scenario("node.yaml");
  EXPECT_EQ(load_scenario_file((dir_ / "run.yaml").string()).cluster.gpus_per_node, 4);
  EXPECT_THROW(load_scenario_text(scenario((dir_ / "missing.yaml").string())), ScenarioError);
}

TEST_F(HardwareFile, HostStandsForTheCalibratedFileOnceSet) {
  const int placeholder = load_scenario_text(scenario("host")).cluster.gpus_per_node;
  EXPECT_NE(placeholder, 4);
  set_host_cluster_file((dir_ / "node.yaml").string());
  const Scenario calibrated = load_scenario_text(scenario("host"));
  EXPECT_EQ(calibrated.cluster.gpus_per_node, 4);
  EXPECT_EQ(calibrated.cluster.name, "host");
  set_host_cluster_file("");
  EXPECT_EQ(load_scenario_text(scenario("host")).cluster.gpus_per_node, placeholder);
}

}  // namespace
}  // namespace twinsim
