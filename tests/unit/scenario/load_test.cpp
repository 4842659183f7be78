// Loading scenarios as SCENARIO.md describes them: catalog names, inline mappings,
// presets, --set overrides, and what the loader fills in.
#include <gtest/gtest.h>

#include "scenario/load.hpp"

namespace twinsim {
namespace {

const char* kBase = R"(
model: llama2-7b
cluster: dgx-a100-80gb
training: {seq_len: 4096, global_batch: 64, micro_batch: 1}
plan: {tp: 2, pp: 2, dp: 4}
)";

TEST(LoadScenario, DefaultScenarioIsGpt3OnDgxA100) {
  const Scenario s = load_scenario_text(default_scenario_text());
  EXPECT_EQ(s.model.name, "gpt3-175b");
  EXPECT_EQ(s.cluster.name, "dgx-a100-80gb");
  EXPECT_EQ(s.plan.world_size(), 1536);
  EXPECT_EQ(s.cluster.nodes, 192);  // 1536 GPUs / 8 per node
  EXPECT_EQ(s.plan.stage_layers.size(), 16u);
  EXPECT_EQ(s.plan.stage_layers[0], 6);
}

TEST(LoadScenario, CatalogNamesResolve) {
  const Scenario s = load_scenario_text(kBase);
  EXPECT_EQ(s.model.hidden, 4096);
  EXPECT_EQ(s.model.ffn_hidden, 11008);
  EXPECT_EQ(s.model.activation, Activation::swiglu);
  EXPECT_EQ(s.cluster.gpu.memory_bytes, 80LL * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(s.cluster.gpu.peak(Dtype::bf16), 312e12);  // A100 datasheet, dense BF16
  EXPECT_EQ(s.cluster.nodes, 2);
  EXPECT_EQ(s.training->precision, Dtype::bf16);
  EXPECT_EQ(s.plan.schedule, Schedule::one_f_one_b);
}

TEST(LoadScenario, InlineModelDefaults) {
  const Scenario s = load_scenario_text(R"(
model: {layers: 4, hidden: 256, heads: 4, vocab: 512}
cluster: {gpu: a100-sxm-80gb, gpus_per_node: 8, nodes: 1}
training: {seq_len: 128, global_batch: 8}
plan: {tp: 1}
)");
  EXPECT_EQ(s.model.head_dim, 64);
  EXPECT_EQ(s.model.kv_heads, 4);
  EXPECT_EQ(s.model.ffn_hidden, 1024);
  EXPECT_EQ(s.plan.dp, 8);  // the rest of the cluster's GPUs
  EXPECT_EQ(s.model.name, "custom");
}

TEST(LoadScenario, PresetsAcceptOverrides) {
  const Scenario s = load_scenario_text(R"(
model: {preset: llama2-7b, layers: 2}
cluster: {preset: dgx-h100, nodes: 1, intra_node: {bandwidth_GBps: 100}}
training: {seq_len: 1024, global_batch: 8}
plan: {tp: 8}
)");
  EXPECT_EQ(s.model.layers, 2);
  EXPECT_EQ(s.model.hidden, 4096);
  EXPECT_DOUBLE_EQ(s.cluster.intra_node.bandwidth_Bps, 100e9);
  EXPECT_EQ(s.cluster.gpu.name, "h100-sxm");
}

TEST(LoadScenario, SetOverridesApplyInOrder) {
  const Scenario s = load_scenario_text(kBase, {"plan.tp=4", "plan.dp=2", "training.micro_batch=2",
                                                "model.layers=8", "plan.sequence_parallel=true"});
  EXPECT_EQ(s.plan.tp, 4);
  EXPECT_EQ(s.plan.dp, 2);
  EXPECT_EQ(s.training->micro_batch, 2);
  EXPECT_EQ(s.model.layers, 8);  // the catalog entry, edited
  EXPECT_TRUE(s.plan.sequence_parallel);
}

// `--set cluster.gpu.KEY=...` on a cluster preset edits the node's own GPU, the rest of it
// kept: on `cluster: dgx-a100-80gb` (its file: `gpu: a100-sxm-80gb`) and on the DGX H800, whose file
// gives a GPU mapping of its own (h100-sxm with its NVLink cut to 200 GB/s). Before, the
// key started an empty GPU mapping ("cluster.gpu.memory_GiB: is required").
TEST(LoadScenario, SetEditsTheGpuOfAClusterPreset) {
  const Scenario plain = load_scenario_text(kBase);
  const Scenario s = load_scenario_text(kBase, {"cluster.gpu.memory_efficiency=0.5", "cluster.gpu.peak_tflops.bf16=900"});
  EXPECT_EQ(s.cluster.gpu.name, "a100-sxm-80gb");
  EXPECT_DOUBLE_EQ(s.cluster.gpu.memory_efficiency, 0.5);
  EXPECT_DOUBLE_EQ(s.cluster.gpu.peak(Dtype::bf16), 900e12);
  EXPECT_DOUBLE_EQ(s.cluster.gpu.peak(Dtype::fp16), plain.cluster.gpu.peak(Dtype::fp16));
  EXPECT_EQ(s.cluster.gpu.memory_bytes, plain.cluster.gpu.memory_bytes);
  EXPECT_EQ(s.cluster.gpu.gemm_efficiency.size(), plain.cluster.gpu.gemm_efficiency.size());
  const std::string h800 = R"(
model: gpt2-small
cluster: {preset: dgx-h800, nodes: 1}
training: {seq_len: 1024, global_batch: 8}
plan: {tp: 1}
)";
  const Scenario edited = load_scenario_text(h800, {"cluster.gpu.sms=100"});
  EXPECT_EQ(edited.cluster.gpu.sms, 100);
  EXPECT_DOUBLE_EQ(edited.cluster.gpu.nvlink_bandwidth_Bps, 200e9);  // the H800's own, kept
}

TEST(LoadScenario, SetAcceptsLists) {
  const Scenario s = load_scenario_text(kBase, {"plan.stage_layers=[15, 17]"});
  EXPECT_EQ(s.plan.stage_layers, (std::vector<int>{15, 17}));
}

TEST(LoadScenario, JsonIsAccepted) {
  const Scenario s = load_scenario_text(R"({"model": "gpt2-small", "cluster": "dgx-h100",
    "inference": {"prompt_len": 512, "output_len": 64, "batch": 8}, "plan": {"tp": 1}})");
  EXPECT_TRUE(s.inference.has_value());
  EXPECT_EQ(s.inference->batch, 8);
}

TEST(LoadScenario, UnevenStagesAsLlama3_405b) {
  // Llama 3 405B: 126 layers on 16 stages, first and last one fewer (Dubey et al. 2024, §3.3.2)
  std::string stages = "[7";
  for (int i = 1; i < 15; ++i) stages += ", 8";
  stages += ", 7]";
  const Scenario s = load_scenario_text(R"(
model: llama3-405b
cluster: dgx-h100
training: {seq_len: 8192, global_batch: 2048}
plan: {tp: 8, pp: 16, dp: 8, stage_layers: )" + stages + "}\n");
  EXPECT_EQ(s.plan.stage_layers.front(), 7);
  EXPECT_EQ(s.plan.stage_layers[1], 8);
}

TEST(LoadScenario, FileThatDoesNotExist) {
  try {
    load_scenario_file("/nonexistent/x.yaml");
    FAIL();
  } catch (const ScenarioError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot be opened"), std::string::npos);
  }
}

TEST(LoadScenario, EveryNodeTypeLoads) {
  for (const std::string& name : catalog_node_names()) {
    const ClusterSpec c = catalog_node(name);
    EXPECT_GT(c.gpu.memory_bytes, 0) << name;
    EXPECT_GT(c.intra_node.bandwidth_Bps, 0) << name;
  }
}

}  // namespace
}  // namespace twinsim
