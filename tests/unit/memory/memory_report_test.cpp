// The whole prediction: stages, peak, fits, and the report's JSON keys (SCENARIO.md).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "scenario/load.hpp"
#include "sim/memory/inference.hpp"
#include "sim/memory/memory_report.hpp"
#include "sim/memory/weights.hpp"
#include "tests/unit/memory/test_models.hpp"

namespace twinsim {
namespace {

ClusterSpec a100_80gb_nodes(int nodes) {
  ClusterSpec c;
  c.gpu.name = "a100-sxm-80gb";
  c.gpu.memory_bytes = 85'899'345'920;  // 80 GiB HBM2e (NVIDIA A100 datasheet)
  c.gpus_per_node = 8;
  c.nodes = nodes;
  return c;
}

// GPT-3 175B as Narayanan et al. 2021, Table 1 trains it: t = 8, p = 16, 1536 GPUs,
// batch 1536, micro-batch 1, full activation recomputation, no distributed optimizer.
Scenario gpt3_training() {
  Scenario s;
  s.model = test::gpt3_175b();
  s.cluster = a100_80gb_nodes(192);
  s.plan.tp = 8, s.plan.pp = 16, s.plan.dp = 12;
  s.plan.recompute = Recompute::full;
  TrainingWorkload t;
  t.seq_len = 2048, t.global_batch = 1536, t.micro_batch = 1;
  s.training = t;
  return s;
}

TEST(MemoryReport, Gpt3OnDgxA100Fits) {
  const MemoryReport r = predict_memory(gpt3_training());
  ASSERT_EQ(r.stages.size(), 16u);
  EXPECT_TRUE(r.fits);
  // 96/16 = 6 layers of ~1.81B/8 parameters (12h^2 + 13h each) at 16 bytes: ~21.7 GB
  const double layer_params = 12.0 * 12288 * 12288 + 13 * 12288;
  EXPECT_NEAR(static_cast<double>(r.stages[5].breakdown.params + r.stages[5].breakdown.grads +
                                  r.stages[5].breakdown.optimizer),
              6 * layer_params / 8 * 16, 6 * layer_params / 8 * 16 * 1e-3);
  EXPECT_EQ(r.breakdown.kv_cache, 0);
}

TEST(MemoryReport, PeakIsTheLargestStage) {
  const MemoryReport r = predict_memory(gpt3_training());
  std::int64_t largest = 0;
  for (const StageMemory& s : r.stages) {
    EXPECT_EQ(s.peak_bytes, s.breakdown.total());
    largest = std::max(largest, s.peak_bytes);
  }
  EXPECT_EQ(r.peak_bytes, largest);
  EXPECT_EQ(r.breakdown.total(), largest);
  // 1F1B: the first stage keeps 16 micro-batches of its layers, the last one
  EXPECT_GT(r.stages[0].breakdown.activations, r.stages[15].breakdown.activations);
}

TEST(MemoryReport, DoesNotFitWithoutParallelism) {
  Scenario s = gpt3_training();
  s.plan.tp = 1, s.plan.pp = 1, s.plan.dp = 1536;
  s.cluster = a100_80gb_nodes(192);
  const MemoryReport r = predict_memory(s);
  EXPECT_FALSE(r.fits);
  EXPECT_GT(r.peak_bytes, 16LL * 174'000'000'000);  // 16 bytes per parameter at least
}

TEST(MemoryReport, InferenceHasKvCacheAndNoOptimizer) {
  Scenario s;
  s.model = test::llama2_7b();
  s.cluster = a100_80gb_nodes(1);
  s.cluster.gpus_per_node = 1;
  InferenceWorkload w;
  w.batch = 16, w.prompt_len = 2048, w.output_len = 128;
  w.weight_dtype = w.kv_dtype = Dtype::fp16;
  s.inference = w;
  const MemoryReport r = predict_memory(s);
  EXPECT_EQ(r.breakdown.kv_cache, 524'288LL * 16 * (2048 + 128));
  EXPECT_EQ(r.breakdown.params, 2 * 6'738'415'616LL);
  EXPECT_EQ(r.breakdown.grads + r.breakdown.optimizer, 0);
  EXPECT_TRUE(r.fits);
}

std::set<std::string> keys(const nlohmann::json& j) {
  std::set<std::string> k;
  for (auto it = j.begin(); it != j.end(); ++it) k.insert(it.key());
  return k;
}

// SCENARIO.md, "memory" object of the report: these exact names.
TEST(MemoryReport, JsonKeysOfTheContract) {
  const MemoryReport r = predict_memory(gpt3_training());
  const nlohmann::json j = to_json(r);
  // SCENARIO.md's five keys, the host's two (plan.offload_optimizer) added after, and
  // training's caching-allocator reserve and the memory outside the allocator
  EXPECT_EQ(keys(j), (std::set<std::string>{"capacity_bytes", "peak_bytes", "fits", "breakdown", "stages",
                                            "host_bytes", "host_capacity_bytes", "reserved_peak_bytes",
                                            "outside_allocator_bytes"}));
  EXPECT_GE(j["reserved_peak_bytes"].get<std::int64_t>(), r.peak_bytes - r.breakdown.buffers);
  const std::set<std::string> categories{"params", "grads", "optimizer", "activations", "kv_cache", "buffers"};
  EXPECT_EQ(keys(j["breakdown"]), categories);
  ASSERT_EQ(j["stages"].size(), 16u);
  EXPECT_EQ(keys(j["stages"][3]), (std::set<std::string>{"stage", "peak_bytes", "breakdown", "host_bytes"}));
  EXPECT_EQ(j["host_bytes"].get<std::int64_t>(), 0);  // nothing offloaded
  EXPECT_EQ(keys(j["stages"][3]["breakdown"]), categories);
  EXPECT_EQ(j["stages"][3]["stage"], 3);
  EXPECT_EQ(j["peak_bytes"].get<std::int64_t>(), r.peak_bytes);
  EXPECT_EQ(j["capacity_bytes"].get<std::int64_t>(), 85'899'345'920);
  EXPECT_TRUE(j["fits"].get<bool>());
}

}  // namespace
}  // namespace twinsim

namespace twinsim {
namespace {

// The host CPU holds no cuBLAS/NCCL workspace, only the executor's GEMM workspace (0.75 MiB)
// beside the activation-side buffers.
TEST(MemoryReport, HostHoldsOnlyTheGemmWorkspace) {
  Scenario gpu = load_scenario_text(R"(
model: tiny-gpt
cluster: {gpu: a100-sxm-80gb, gpus_per_node: 8, nodes: 1}
training: {seq_len: 64, global_batch: 8, micro_batch: 2}
plan: {tp: 2, dp: 4}
)");
  Scenario host = load_scenario_text(R"(
model: tiny-gpt
cluster: host
training: {seq_len: 64, global_batch: 8, micro_batch: 2}
plan: {tp: 2, dp: 4}
)");
  const std::int64_t with_workspace = predict_memory(gpu).breakdown.buffers;
  const std::int64_t without = predict_memory(host).breakdown.buffers;
  // 32 MiB cuBLAS + 64 MiB for each of the TP and DP communicators, against 0.75 MiB
  EXPECT_EQ(with_workspace - without, (32 + 2 * 64) * (std::int64_t{1} << 20) - 786432);
}

}  // namespace
}  // namespace twinsim
