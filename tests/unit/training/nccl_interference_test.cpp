// Compute overlapped with NCCL kernels runs on the SMs they leave (cluster.nccl_channels;
// sim/cost/collective_cost.cpp nccl_compute_slowdown, the engine's interference). Figures
// derived by hand from the catalog's SM and channel counts.
#include <gtest/gtest.h>

#include <string>

#include "scenario/load.hpp"
#include "sim/cost/collective_cost.hpp"
#include "sim/training/training_report.hpp"

namespace twinsim {
namespace {

TEST(NcclInterference, TheCatalogNodesLoseTheirChannelsSms) {
  EXPECT_DOUBLE_EQ(nccl_compute_slowdown(catalog_node("dgx-a100-80gb")), 108.0 / (108 - 24));
  EXPECT_DOUBLE_EQ(nccl_compute_slowdown(catalog_node("dgx-h100")), 132.0 / (132 - 24));
  ClusterSpec none = catalog_node("dgx-h100");
  none.nccl_channels = 0;
  EXPECT_DOUBLE_EQ(nccl_compute_slowdown(none), 1.0);
}

TEST(NcclInterference, TheClosedFormMatchesTheEnginesRule) {
  // 10 of work beside 4 of comm at 1.5x: 4 slowed (8/3 done), 22/3 more at full speed
  EXPECT_NEAR(interfered_s(10, 4, 1.5), 4 + 22.0 / 3, 1e-12);
  EXPECT_NEAR(interfered_s(2, 10, 1.5), 3, 1e-12);  // slowed throughout
  EXPECT_NEAR(interfered_s(10, 4, 1.0), 10, 1e-12);
}

Scenario zero3(int channels) {
  return load_scenario_text(R"(
model: llama2-7b
cluster: dgx-a100-80gb
training: {seq_len: 4096, global_batch: 64, micro_batch: 1, precision: bf16}
plan: {tp: 1, pp: 1, dp: 64, zero: 3, recompute: none}
)",
                            {"cluster.nccl_channels=" + std::to_string(channels)});
}

TEST(NcclInterference, OverlappedZero3GathersSlowTheCompute) {
  const TrainingPrediction without = predict_training(zero3(0));
  const TrainingPrediction with = predict_training(zero3(24));
  // every layer's compute overlaps a gather: compute time grows, at most by 108/84
  EXPECT_GT(with.breakdown.compute_s, without.breakdown.compute_s * 1.01);
  EXPECT_LE(with.breakdown.compute_s, without.breakdown.compute_s * 108.0 / 84 + 1e-9);
  EXPECT_GT(with.step_s, without.step_s);
}

}  // namespace
}  // namespace twinsim
