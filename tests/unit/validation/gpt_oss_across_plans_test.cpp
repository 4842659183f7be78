// Where gpt-oss-120B's miss lives (issue 53), read from the runs Megatron-Bridge published of the
// same model on other plans (docs/performance-summary.md at v0.3.0 and docs/performance-summary-
// archive.md; each scenario file cites its row and recipe). Earlier sessions put the H100 miss
// (+40%) at a cost per local expert (about 30-40 us a GEMM pass on GPUs holding 16 experts, none on
// GPUs holding 4) or in the H100 plan's last pipeline stage (the 201,088-token head,
// gpt_oss_head_test.cpp). The B200 rows run no pipeline and cover 2 and 16 local experts:
//   H100 26.02     PP 4, EP 8:  16 local experts, 1 x 4,096 tokens a micro-batch, 1,024 rows an expert
//   B200 25.11     PP 1, EP 64:  2 local experts, 4 x 4,096 tokens, 32,768 rows an expert
//   B200 26.02     the same at GBS 1,280
//   B200 26.02.01  PP 1, EP 8:  16 local experts, 4 x 4,096 tokens, 4,096 rows an expert (HybridEP
//                  inside the node, priced as NCCL's all-to-all there: 0.46 s of the step)
// and Qwen3-30B-A3B on 8 B200s (26.02.01, the same 16 local experts and dispatcher) is within 1%.
// Every gpt-oss row is predicted too fast. Per layer and micro-batch, the missing time is not a
// fixed cost per expert GEMM pass: on the B200 at 16 experts it is about 2x the H100's, on a
// faster GPU, and at 2 experts it would be ~0.8-0.9 ms a pass (those EP-64 steps are 60% priced
// cross-node all-to-all, so part of their miss may sit there; the EP-8 row's is 12%). Per routed row (tokens x top-4)
// it is ~300 ns on the H100 and ~150-180 ns on the B200, the GPUs' speed ratio: device work that grows with the tokens,
// in something gpt-oss runs and Qwen3-30B does not (its experts' biases: TE's GroupedLinear adds fc1's bias in
// cuBLASLt's epilogue and reduces its gradient in the wgrad GEMM's BGRADB epilogue,
// transformer_engine/pytorch/module/grouped_linear.py v2.9 l.170-182, 405-432; the clamped GEGLU; sink attention; the
// 2,880 width). Not priced: no component figure times those on these GPUs. scripts/gpu_moe_expert_probe.py and
// gpu_gpt_oss_sink_attention.py are the measurements that would.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "scenario/load.hpp"
#include "sim/training/training_report.hpp"

namespace twinsim {
namespace {

struct GptOssRow {
  const char* scenario;  // under scenarios/validation/training/
  const char* label;
  std::int64_t global_batch;
  double published;  // tokens/s per GPU
  int local_experts;
  int layers_on_binding_stage;
};

struct Miss {
  double ratio = 0;           // predicted / published tokens/s
  double per_layer_mb_s = 0;  // the missing step time per layer and micro-batch on the binding stage
  double per_pass_s = 0;      // ... per expert GEMM pass (6 a layer: gate_up and down, fwd/dgrad/wgrad)
  double per_row_s = 0;       // ... per routed row (tokens x top-4)
};

Miss miss_of(const GptOssRow& row) {
  Scenario s = load_scenario_file(std::string(TWINSIM_SOURCE_DIR) + "/scenarios/validation/training/" + row.scenario);
  s.training->global_batch = row.global_batch;
  const TrainingPrediction p = predict_training(s);
  const TrainingWorkload& w = *s.training;
  const double gpus = static_cast<double>(s.plan.dp) * s.plan.pp * s.plan.tp;
  const double published_step = static_cast<double>(w.global_batch * w.seq_len) / gpus / row.published;
  const double layer_mbs = static_cast<double>(w.micro_batches(s.plan.dp)) * row.layers_on_binding_stage;
  Miss m;
  m.ratio = p.throughput.tokens_per_s_per_gpu / row.published;
  m.per_layer_mb_s = (published_step - p.step_s) / layer_mbs;
  m.per_pass_s = m.per_layer_mb_s / (6.0 * row.local_experts);
  m.per_row_s = m.per_layer_mb_s / (static_cast<double>(w.micro_batch * w.seq_len) * 4);
  std::printf(
      "%-16s predicted %6.0f published %6.0f (%+.1f%%): missing %.2f ms a layer-micro-batch, "
      "%.0f us an expert GEMM pass (%d local experts), %.0f ns a routed row\n",
      row.label, p.throughput.tokens_per_s_per_gpu, row.published, 100 * (m.ratio - 1), m.per_layer_mb_s * 1e3,
      m.per_pass_s * 1e6, row.local_experts, m.per_row_s * 1e9);
  return m;
}

constexpr GptOssRow kH100 = {"megatron-bridge-gpt-oss-120b-h100-26.02.yaml", "H100 26.02", 1280, 5993, 16, 9};
constexpr GptOssRow kB200Ep64Gbs512 = {
    "megatron-bridge-gpt-oss-120b-b200-26.02.yaml", "B200 25.11 EP64", 512, 8213, 2, 36};
constexpr GptOssRow kB200Ep64 = {"megatron-bridge-gpt-oss-120b-b200-26.02.yaml", "B200 26.02 EP64", 1280, 8047, 2, 36};
constexpr GptOssRow kB200Ep8 = {
    "megatron-bridge-gpt-oss-120b-b200-26.02.01.yaml", "B200 26.02.01 EP8", 1280, 13722, 16, 36};

TEST(GptOssAcrossPlans, EveryPlanIsPredictedTooFast) {
  // today: H100 +39.8%, B200 EP64 +21.2% / +24.1%, B200 EP8 +53.3%
  for (const GptOssRow& row : {kH100, kB200Ep64Gbs512, kB200Ep64, kB200Ep8}) {
    const Miss m = miss_of(row);
    EXPECT_GT(m.ratio, 1.15) << row.label;
    EXPECT_LT(m.ratio, 1.8) << row.label;
  }
}

TEST(GptOssAcrossPlans, TheMissIsNotAFixedCostPerLocalExpert) {
  const Miss h100 = miss_of(kH100);
  const Miss b200 = miss_of(kB200Ep8);
  const Miss b200_two = miss_of(kB200Ep64);
  // By hand (published step = GBS x 4,096 / GPUs / published tokens/s):
  // H100: 13.669 - 9.777 s over 80 micro-batches x 9 layers = 5.41 ms; / 96 passes = 56 us;
  //   / (4,096 x 4) rows = 330 ns.
  // B200 EP8: 5.970 - 3.893 s over 5 x 36 = 11.5 ms; / 96 = 120 us; / 65,536 = 176 ns.
  // B200 EP64 (26.02): 10.180 - 8.200 s over 5 x 36 = 11.0 ms; / 12 = 917 us; / 65,536 = 168 ns.
  // The same 16 experts on a 2.3x faster GPU miss 2x more a pass: not a per-expert host or launch
  // cost (30-40 us a pass, s11), which would not grow there.
  EXPECT_GT(b200.per_pass_s, 1.5 * h100.per_pass_s);
  // Two experts a GPU still miss more a pass than that explanation allows by far.
  EXPECT_GT(b200_two.per_pass_s, 5 * 40e-6);
  // Per routed row the two B200 plans agree within 30%, and the H100 misses more a row.
  EXPECT_NEAR(b200_two.per_row_s / b200.per_row_s, 1.0, 0.3);
  EXPECT_GT(h100.per_row_s, b200.per_row_s);
}

TEST(GptOssAcrossPlans, QwenWithTheSameSixteenExpertsOnB200IsNotMissed) {
  // megatron-bridge-qwen3-30b-a3b-b200-26.02.01.yaml: 16 local experts, HybridEP, MBS 4, 26,695
  // tokens/s per GPU published; predicted within 15% (moe_published_runs_test.cpp holds its band).
  Scenario s = load_scenario_file(std::string(TWINSIM_SOURCE_DIR) +
                                  "/scenarios/validation/training/megatron-bridge-qwen3-30b-a3b-b200-26.02.01.yaml");
  const double ratio = predict_training(s).throughput.tokens_per_s_per_gpu / 26695;
  std::printf("Qwen3-30B-A3B B200 26.02.01 (16 local experts): %+.1f%%\n", 100 * (ratio - 1));
  EXPECT_NEAR(ratio, 1.0, 0.15);
}

}  // namespace
}  // namespace twinsim
