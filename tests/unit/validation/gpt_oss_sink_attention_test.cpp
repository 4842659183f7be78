// Which attention the published gpt-oss-120B runs paid for (issue 53: predicted ~40% fast).
// gpt-oss's learnable sinks (Megatron-Bridge gpt_oss_bridge.py: softmax_type "learnable",
// window_size (127, 0) on every other layer) reach Transformer Engine's DotProductAttention,
// which runs them fused only on cuDNN >= 9.13.1 (TransformerEngine PR #2148, TE 2.8) and
// otherwise falls back to UnfusedDotProductAttention (TransformerEngine issue #2318: TE 2.8
// with cuDNN 9.10.2). The unfused path stores the softmax's s x s probabilities for the
// backward; the run could not have held them, so it ran cuDNN's fused sink attention, whose
// sink costs one logit a head forward and a per-head reduction of the rows' statistics
// backward: nothing the kernel's rate curve would notice (scripts/gpu_gpt_oss_sink_attention.py
// measures it on a GPU; not run).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "scenario/load.hpp"
#include "sim/memory/memory_report.hpp"

namespace twinsim {
namespace {

Scenario gpt_oss_26_02() {
  return load_scenario_file(std::string(TWINSIM_SOURCE_DIR) +
                            "/scenarios/validation/training/megatron-bridge-gpt-oss-120b-h100-26.02.yaml");
}

TEST(GptOssSinkAttention, TheUnfusedFallbackCannotHaveRun) {
  Scenario fused = gpt_oss_26_02();
  const MemoryReport with_flash = predict_memory(fused);
  EXPECT_TRUE(with_flash.fits);
  Scenario unfused = gpt_oss_26_02();
  unfused.plan.flash_attention = false;
  const MemoryReport without = predict_memory(unfused);
  EXPECT_FALSE(without.fits) << static_cast<double>(without.peak_bytes) / (1 << 30) << " GiB";
  // By hand: the first of 4 stages (1F1B) holds 4 micro-batches of its 9 layers; each layer keeps
  // the softmax's output, 64 heads x 4,096 queries x the keys the op list prices x 2 bytes.
  // Keys: half the layers a 128-token window (128 x 129 / 2 + 3,968 x 128 = 516,160 of
  // 4,096 x 4,097 / 2 = 8,390,656 causal pairs: a 252-key span), half 4,096: 2,174. So 1.14 GB a
  // layer, and the probabilities alone add 36 x 1.14 GB = 41.0 GB (38.2 GiB) to the fused peak.
  // The unfused kernel computes every layer's full 4,096 keys, masked: the run would need more.
  const std::int64_t probs = std::int64_t{4} * 9 * 64 * 4096 * 2174 * 2;
  EXPECT_GE(without.peak_bytes - with_flash.peak_bytes, probs);
  EXPECT_GT(with_flash.peak_bytes + probs, without.capacity_bytes);
}

}  // namespace
}  // namespace twinsim
