// Is gpt-oss-120B's 201,088-token vocabulary where its published runs lose the ~40% the
// simulator misses (issue 53)? The head sits on the last of 4 pipeline stages, the stage that
// sets the step (Megatron-Bridge v0.3.0: the recipe leaves account_for_embedding/loss_in_
// pipeline_split False and the H100 workload config sets no pp_layout, so 9 layers a stage).
// What those runs execute there, read from the software:
// - the output layer: one bf16 GEMM per pass, M 4,096 tokens x N 201,088 x K 2,880;
// - the loss: scripts/performance/utils/overrides.py (_set_common_perf_overrides, v0.3.0 l.64)
//   sets model.cross_entropy_fusion_impl = "te", so Megatron-core runs Transformer Engine's
//   Triton parallel cross entropy (transformer_engine/pytorch/triton/cross_entropy.py, v2.9):
//   online_softmax_kernel reads each bf16 logit once (the row's max and sum), cross_entropy_kernel
//   reads it again and writes the gradient in place in bf16: 6 bytes a logit forward, no fp32
//   logits; the backward's element_mul_kernel scales that gradient in place: 4 bytes a logit.
// Both are measured or counted here against the op list: the head is priced at or above what its
// kernels take, so the missing time is not in the head.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "models/op_names.hpp"
#include "scenario/load.hpp"
#include "sim/training/layer_costs.hpp"

namespace twinsim {
namespace {

Scenario gpt_oss_head_scenario() {
  return load_scenario_file(std::string(TWINSIM_SOURCE_DIR) +
                            "/scenarios/validation/training/megatron-bridge-gpt-oss-120b-h100-26.02.yaml");
}

const OpTime& head_op(const LayerCost& head, std::string_view name) {
  for (const OpTime& op : head.ops)
    if (op.name == name) return op;
  ADD_FAILURE() << "no " << name;
  return head.ops.front();
}

// One micro-batch's logits: 4,096 tokens x 201,088 (TP 1, CP 1).
constexpr double kLogits = 4096.0 * 201088.0;
// One pass of the output layer: 2 x 4,096 x 201,088 x 2,880 = 4.7443e12 FLOP.
constexpr double kHeadGemmFlop = 2.0 * kLogits * 2880.0;

// The fastest H100 bf16 cuBLAS rate among the measured products bracketing each pass of the
// output layer (ai-dynamo/aiconfigurator 095f58a5, Apache-2.0, systems/data/h100_sxm/gemm/
// trtllm/1.3.0rc10/gemm_perf.parquet; TRT-LLM Linear, 5 calls replayed in a CUDA graph; the
// grid stops at N 65,536, so the widest N stands in for 201,088). TFLOP/s = 2mnk / latency.
// forward M 4096 x N 201088 x K 2880: (4096, 65536, 2560) 1.734688 ms = 792.3,
//   (4096, 65536, 3072) 2.205787 ms = 747.7;
// dgrad M 4096 x N 2880 x K 201088: (4096, 2560, 51200) 1.284752 ms = 835.8,
//   (4096, 3072, 51200) 1.560117 ms = 825.9, (4096, 2560, 65536) 763.8, (4096, 3072, 65536) 754.3;
// wgrad 2880 x 201088 x K 4096: (3072, 65536, 4096) 2.015616 ms = 818.2, (2560, 65536, 4096)
//   758.5, (32768, 2560, 4096) 805.8, (32768, 3072, 4096) 786.7.
constexpr double kFwdMeasuredTflops = 792.3;
constexpr double kDgradMeasuredTflops = 835.8;
constexpr double kWgradMeasuredTflops = 818.2;

TEST(GptOssHead, TheOutputLayerIsNotPricedFasterThanCublasMeasures) {
  const LayerCost head = cost_head(gpt_oss_head_scenario());
  const OpTime& logits = head_op(head, op_names::kHeadLogits);
  // the fastest measured times: 4.7443e12 / 792.3e12 = 5.99 ms, / 835.8e12 = 5.68 ms,
  // / 818.2e12 = 5.80 ms; the op list prices 6.62 / 7.28 / 6.64 ms today
  const double fwd = kHeadGemmFlop / (kFwdMeasuredTflops * 1e12);
  const double dgrad = kHeadGemmFlop / (kDgradMeasuredTflops * 1e12);
  const double wgrad = kHeadGemmFlop / (kWgradMeasuredTflops * 1e12);
  std::printf("gpt-oss head GEMM priced/measured-fastest: fwd %.3f dgrad %.3f wgrad %.3f\n", logits.fwd_s / fwd,
              logits.dgrad_s / dgrad, logits.wgrad_s / wgrad);
  EXPECT_GE(logits.fwd_s, fwd);
  EXPECT_GE(logits.dgrad_s, dgrad);
  EXPECT_GE(logits.wgrad_s, wgrad);
  // and not absurdly slow either: within 35% of the fastest measured bracket row
  EXPECT_LT(logits.fwd_s + logits.dgrad_s + logits.wgrad_s, 1.35 * (fwd + dgrad + wgrad));
}

TEST(GptOssHead, TheLossMovesAtLeastTransformerEnginesCrossEntropyBytes) {
  const LayerCost head = cost_head(gpt_oss_head_scenario());
  const OpTime& loss = head_op(head, op_names::kHeadLoss);
  // TE's Triton cross entropy (header): forward 2 + 2 + 2 = 6 bytes a bf16 logit, so
  // 6 x 823,656,448 = 4,941,938,688 bytes; the op list counts the same.
  EXPECT_DOUBLE_EQ(loss.fwd_bytes, 6 * kLogits);
  // backward: element_mul_kernel reads and writes the bf16 gradient in place, 4 bytes a logit
  // (3.29 GB); the op list moves 12 (9.88 GB), so its backward is about 2.3 ms a micro-batch
  // slow, never fast. Pricing it as TE runs it would move gpt-oss further from its published
  // figure (the sign the keep rule refuses), so it is recorded here, not changed.
  EXPECT_GE(loss.bwd_bytes, 4 * kLogits);
  EXPECT_DOUBLE_EQ(loss.bwd_bytes, 12 * kLogits);
  std::printf("gpt-oss head.loss: fwd %.2f ms, bwd %.2f ms (TE's backward moves 1/3 of the bytes)\n", loss.fwd_s * 1e3,
              (loss.dgrad_s + loss.wgrad_s) * 1e3);
}

}  // namespace
}  // namespace twinsim
