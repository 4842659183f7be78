// ZeRO-Inference (plan.offload_params on inference) against hand-derived figures: at batch 1
// every module's kernels are far shorter than its weights' fetch, so a decode pass takes the
// fetches alone: the model's bytes over the tier's rate (the PCIe link from CPU memory, or
// the drives of an Azure ND H200 v5, 48 GB/s, all of them for the one GPU in use).
#include <gtest/gtest.h>

#include <string>

#include "scenario/errors.hpp"
#include "scenario/load.hpp"
#include "sim/inference/batch_prediction.hpp"
#include "sim/memory/inference.hpp"
#include "sim/memory/memory_report.hpp"
#include "sim/memory/weights.hpp"

namespace twinsim {
namespace {

const char* kText = R"(
model: llama3-70b
cluster: azure-nd-h200-v5
inference: {prompt_len: 128, output_len: 2, batch: 1}
plan: {tp: 1, pp: 1, dp: 1, offload_params: true}
stack: none  # the device and its links alone: the figures below are the stream's
)";

TEST(WeightOffload, DecodeStreamsTheWholeModelOncePerPass) {
  const Scenario cpu = load_scenario_text(kText);
  const Scenario nvme = load_scenario_text(kText, {"plan.offload_device=nvme"});
  // Llama-3-70B in bf16 (2 B a value): 80 layers of 855.7M values (Q, K, V, O at 8,192 wide
  // with 8 KV heads of 128, SwiGLU 28,672, two norms), the embedding and the untied head of
  // 128,256 x 8,192 each, the final norm (models/catalog/llama3-70b.yaml)
  const std::int64_t layer = 2 * (8192LL * (8192 + 2 * 1024 + 8192) + 3 * 8192LL * 28672 + 2 * 8192);
  const std::int64_t table = 2 * 128256LL * 8192;
  const OffloadedModuleBytes m = offloaded_module_bytes(cpu.model, cpu.plan, Dtype::bf16);
  EXPECT_EQ(m.dense_layer, layer);
  EXPECT_EQ(m.embedding, table);
  // the GPU keeps the module in use and the next: two embedding tables, the largest module
  const MemoryReport mem = predict_memory(nvme);
  EXPECT_EQ(mem.breakdown.params, 2 * table);
  EXPECT_EQ(mem.nvme_breakdown.params, 80 * layer + 2 * table + 2 * 8192);
  EXPECT_EQ(predict_memory(cpu).host_breakdown.params, 80 * layer + 2 * table + 2 * 8192);
  const double streamed = 80.0 * static_cast<double>(layer) + 2.0 * static_cast<double>(table);
  EXPECT_NEAR(predict_inference(nvme).tpot_s, streamed / 48e9, 1e-9);
  EXPECT_NEAR(predict_inference(cpu).tpot_s, streamed / 52e9, 1e-9);  // the link is the bound
  // without offload the same pass reads the weights from HBM: about 30 ms
  EXPECT_LT(predict_inference(load_scenario_text(kText, {"plan.offload_params=false"})).tpot_s, 0.05);
}

TEST(WeightOffload, RefusedOutsideItsScope) {
  for (const char* bad : {"plan.tp=2", "cluster=dgx-h800"})
    try {
      load_scenario_text(kText, {bad});
      ADD_FAILURE() << bad << " accepted";
    } catch (const ScenarioError& e) {
      EXPECT_NE(std::string(e.what()).find("plan.offload_params"), std::string::npos) << e.what();
    }
  // drives without figures: the catalog's DGX H200 describes none
  EXPECT_THROW(load_scenario_text(kText, {"plan.offload_device=nvme", "cluster=dgx-h200"}), ScenarioError);
  EXPECT_THROW(load_scenario_text(kText, {"plan.offload_params=false", "plan.offload_device=nvme"}), ScenarioError);
}

}  // namespace
}  // namespace twinsim
