// A CPU host's last-level cache shared by its ranks (hardware/core_sharing.hpp
// apply_cache_sharing, issue 61): the reuse curve (GpuSpec::gemm_reuse_time) was measured with
// gemm_reuse_ranks processes each re-using its own set; a plan of r ranks a node reads it at
// its working set x r / gemm_reuse_ranks. A file that does not record them reads it as before.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

#include "hardware/core_sharing.hpp"
#include "scenario/errors.hpp"
#include "scenario/load.hpp"
#include "sim/cost/compute_cost.hpp"
#include "sim/inference/batch_prediction.hpp"

namespace twinsim {
namespace {

constexpr double kMiB = 1048576.0;

// A toy curve: 0.25 of cold at 4 MiB, cold at 16 MiB, measured by 2 processes.
ClusterSpec toy_host() {
  ClusterSpec c;
  c.gpu.gemm_reuse_time = {{4 * kMiB, 0.25}, {16 * kMiB, 1.0}};
  c.gpu.gemm_reuse_ranks = 2;
  return c;
}

TEST(CacheSharing, ARankAloneReadsTheCurveAtItsShareOfTheMeasuredCache) {
  ClusterSpec alone = toy_host();
  apply_cache_sharing(alone, 1);
  // one rank of the 2 measured: its 16 MiB set holds the cache as 8 MiB each of 2 did,
  // t = ln(8/4) / ln(16/4) = 1/2 of the way in log-log: 0.25 x (1.0 / 0.25)^(1/2) = 0.5
  EXPECT_DOUBLE_EQ(alone.gpu.gemm_reuse_set_scale, 0.5);
  EXPECT_NEAR(gemm_reuse_factor(alone.gpu, 16 * kMiB), 0.5, 1e-12);
  // 4 MiB alone reads 2 MiB, below the first point: held at 0.25
  EXPECT_NEAR(gemm_reuse_factor(alone.gpu, 4 * kMiB), 0.25, 1e-12);
  // as many ranks as measured: the curve as it is (16 MiB cold, 8 MiB 0.5)
  ClusterSpec pair = toy_host();
  apply_cache_sharing(pair, 2);
  EXPECT_DOUBLE_EQ(gemm_reuse_factor(pair.gpu, 16 * kMiB), 1.0);
  EXPECT_NEAR(gemm_reuse_factor(pair.gpu, 8 * kMiB), 0.5, 1e-12);
  // 4 ranks: each 4 MiB set counts double, read at 8 MiB: 0.5
  ClusterSpec four = toy_host();
  apply_cache_sharing(four, 4);
  EXPECT_NEAR(gemm_reuse_factor(four.gpu, 4 * kMiB), 0.5, 1e-12);
  // not recorded: read as it is, whatever the ranks
  ClusterSpec unrecorded = toy_host();
  unrecorded.gpu.gemm_reuse_ranks = 0;
  apply_cache_sharing(unrecorded, 1);
  EXPECT_EQ(unrecorded.gpu.gemm_reuse_set_scale, 1.0);
  EXPECT_EQ(gemm_reuse_factor(unrecorded.gpu, 16 * kMiB), 1.0);
}

TEST(CacheSharing, ARankAloneReadsTheCurveMeasuredAlone) {
  // the toy curve, and one process's alone: 0.25 at 4 MiB, cold only at 32 MiB
  ClusterSpec alone = toy_host();
  alone.gpu.gemm_reuse_time_alone = {{4 * kMiB, 0.25}, {32 * kMiB, 1.0}};
  ClusterSpec pair = alone;
  apply_cache_sharing(alone, 1);
  // 16 MiB on the alone curve: t = ln(16/4) / ln(32/4) = 2/3, 0.25 x 4^(2/3) = 0.62996;
  // read at the set itself (the share scale is the busy curve's, not applied to this one)
  EXPECT_EQ(alone.gpu.gemm_reuse_set_scale, 1.0);
  EXPECT_NEAR(gemm_reuse_factor(alone.gpu, 16 * kMiB), 0.25 * std::pow(4.0, 2.0 / 3.0), 1e-12);
  EXPECT_NEAR(gemm_reuse_factor(alone.gpu, 16 * kMiB), 0.62996, 1e-5);
  // two ranks a node: the curve measured beside the other process, as it is (cold at 16 MiB)
  apply_cache_sharing(pair, 2);
  EXPECT_DOUBLE_EQ(gemm_reuse_factor(pair.gpu, 16 * kMiB), 1.0);
}

// tiny-gpt's one-rank decode on a toy host file with the same curve; `ranks_line` records
// (or not) the processes that measured it.
std::string tiny_gpt_on(const std::string& ranks_line) {
  return "model: tiny-gpt\n"
         "cluster:\n"
         "  gpu: {memory_GiB: 16, hbm_bandwidth_GBps: 100, peak_tflops: {fp32: 1}, gemm_efficiency: [[1, 1.0]],\n"
         "        gemm_reuse_time: [[4194304, 0.25], [16777216, 1.0]]" +
         ranks_line +
         "}\n"
         "  gpus_per_node: 2\n"
         "  intra_node: {bandwidth_GBps: 10}\n"
         "inference: {prompt_len: 64, output_len: 32, batch: 4, weight_dtype: fp32, kv_dtype: fp32}\n"
         "plan: {tp: 1, pp: 1, dp: 1}\n"
         "stack: none\n";
}

TEST(CacheSharing, AFileWithoutTheRecordPredictsAsBefore) {
  const Scenario old = load_scenario_text(tiny_gpt_on(""));
  EXPECT_EQ(old.cluster.gpu.gemm_reuse_ranks, 0);
  EXPECT_EQ(old.cluster.gpu.gemm_reuse_set_scale, 1.0);  // x 1.0: the same bits as before
  // measured by one process, run by one: the same scale, so the same prediction to the bit
  const Scenario same = load_scenario_text(tiny_gpt_on(", gemm_reuse_ranks: 1"));
  const InferencePrediction a = predict_inference(old), b = predict_inference(same);
  EXPECT_EQ(a.ttft_s, b.ttft_s);
  EXPECT_EQ(a.tpot_s, b.tpot_s);
  EXPECT_EQ(to_json(a, *old.inference, 1).dump(), to_json(b, *same.inference, 1).dump());
  // measured by two: the one rank has the cache to itself, its decode GEMMs re-use more
  const Scenario shared = load_scenario_text(tiny_gpt_on(", gemm_reuse_ranks: 2"));
  EXPECT_DOUBLE_EQ(shared.cluster.gpu.gemm_reuse_set_scale, 0.5);
  EXPECT_LT(predict_inference(shared).tpot_s, a.tpot_s);
  // measured alone, warm up to 16 MiB: tiny-gpt's decode set (about 15 MiB) reads 0.25, where
  // the busy curve at half the set read more (0.25 x 7.5/4 = 0.47): the alone curve replaces it
  const Scenario lone =
      load_scenario_text(tiny_gpt_on(", gemm_reuse_ranks: 2, gemm_reuse_time_alone: "
                                     "[[16777216, 0.25], [67108864, 1.0]]"));
  EXPECT_EQ(lone.cluster.gpu.gemm_reuse_time.back().size, 67108864.0);
  EXPECT_LT(predict_inference(lone).tpot_s, predict_inference(shared).tpot_s);
  // the alone curve needs the busy one
  EXPECT_THROW(load_scenario_text(
                   "model: tiny-gpt\ncluster: {gpu: {memory_GiB: 16, hbm_bandwidth_GBps: 100, peak_tflops: {fp32: 1}, "
                   "gemm_efficiency: [[1, 1.0]], gemm_reuse_time_alone: [[4194304, 0.25], [67108864, 1.0]]}, "
                   "gpus_per_node: 2, intra_node: {bandwidth_GBps: 10}}\ninference: {prompt_len: 64, output_len: 32, "
                   "batch: 4}\nplan: {tp: 1, pp: 1, dp: 1}\n"),
               ScenarioError);
  // the record needs the curve it was measured for
  EXPECT_THROW(load_scenario_text(
                   "model: tiny-gpt\ncluster: {gpu: {memory_GiB: 16, hbm_bandwidth_GBps: 100, peak_tflops: {fp32: 1}, "
                   "gemm_efficiency: [[1, 1.0]], gemm_reuse_ranks: 2}, gpus_per_node: 2, intra_node: {bandwidth_GBps: "
                   "10}}\ninference: {prompt_len: 64, output_len: 32, batch: 4}\nplan: {tp: 1, pp: 1, dp: 1}\n"),
               ScenarioError);
}

}  // namespace
}  // namespace twinsim
