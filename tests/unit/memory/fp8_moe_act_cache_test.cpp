// plan.fp8_moe_act_cache (DeepSeek-V3 §3.3.2 (2)): the MoE SwiGLU's gate and up cached in fp8 with
// 1x128 tile scales, its output recomputed. Byte counts derived by hand on the committed DeepSeek-V3
// scenario (h 7168, 256 experts of width 2,048, top 8, one shared expert of 2,048, TP 1, EP 64, one
// sequence of 4,096 tokens, fp8 training, busiest expert = mean) and on the tiny MoE test model.
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "models/layer_ops.hpp"
#include "scenario/load.hpp"
#include "sim/memory/activations.hpp"
#include "sim/memory/memory_report.hpp"
#include "tests/unit/memory/test_models.hpp"
#include "tests/unit/scenario/expect_refused.hpp"

namespace twinsim {
namespace {

Scenario fp8_cache_deepseek(const std::string& set) {
  return load_scenario_file(std::string(TWINSIM_SOURCE_DIR) + "/scenarios/training/deepseek-v3-h800.yaml", {set});
}

std::int64_t fp8_cache_kept(const std::vector<LayerOp>& ops, std::string_view op, std::string_view tensor) {
  for (const LayerOp& o : ops)
    if (o.name == op)
      for (const SavedTensor& t : o.saved)
        if (t.name == tensor) return t.bytes;
  return 0;
}

bool fp8_cache_recomputed(const std::vector<LayerOp>& ops, std::string_view op) {
  for (const LayerOp& o : ops)
    if (o.name == op) return o.recomputed;
  return false;
}

std::vector<LayerOp> fp8_cache_moe_layer(const Scenario& s) {
  return build_layer_ops(s.model, s.model.layers - 1, s.plan, training_shape(*s.training, s.stack));
}

// Routed rows 4,096 x 8 = 32,768. Gate (and up): 32,768 x 2,048 fp8 = 67,108,864 bytes + a 4-byte
// scale per 128 of a row's 2,048 (16 a row): 32,768 x 16 x 4 = 2,097,152 -> 69,206,016 (16-bit:
// 134,217,728). Shared expert, 4,096 rows: 8,388,608 + 4,096 x 16 x 4 = 8,650,752 (16-bit:
// 16,777,216); its down GEMM's fp8 input (4,096 x 2,048 = 8,388,608) is no longer kept. The layer
// keeps 2 x 65,011,712 + 2 x 8,126,464 + 8,388,608 = 154,664,960 bytes less.
TEST(Fp8MoeActCache, DeepseekMoeLayerKeepsGateAndUpInFp8WithTileScales) {
  const Scenario on = fp8_cache_deepseek("plan.fp8_moe_act_cache=true");
  const Scenario off = fp8_cache_deepseek("plan.fp8_moe_act_cache=false");
  const std::vector<LayerOp> after = fp8_cache_moe_layer(on), before = fp8_cache_moe_layer(off);
  EXPECT_EQ(fp8_cache_kept(after, "moe.experts.gate_up", "input"), 32768 * 7168);  // the rows: 32,768 at 1 byte
  EXPECT_EQ(fp8_cache_kept(before, "moe.experts.act", "gate"), 134217728);
  EXPECT_EQ(fp8_cache_kept(after, "moe.experts.act", "gate"), 69206016);
  EXPECT_EQ(fp8_cache_kept(after, "moe.experts.act", "up"), 69206016);
  EXPECT_EQ(fp8_cache_kept(after, "moe.shared.act", "gate"), 8650752);
  EXPECT_EQ(fp8_cache_kept(before, "moe.shared.down", "input"), 8388608);
  EXPECT_EQ(fp8_cache_kept(after, "moe.shared.down", "input"), 0);
  EXPECT_FALSE(fp8_cache_recomputed(before, "moe.shared.act"));
  EXPECT_TRUE(fp8_cache_recomputed(after, "moe.shared.act"));
  EXPECT_EQ(saved_bytes(before) - saved_bytes(after), 154664960);
}

// Tiny MoE (h 64, 8 experts, top 2, expert width 128, no shared expert, EP 1, 16 tokens, bf16), moe_act
// recomputed. Routed rows 32: the combine's kept rows 32 x 64 x 2 = 4,096 (rows_h), a 16-bit
// [rows, ffn] 32 x 128 x 2 = 8,192. The MoE backward: dy + the norm output's grad (2 x 16 x 64 x 2 =
// 4,096), then the combine's grads with the router's fp32 probabilities (16 x 8 x 4 = 512) and the
// rows (peak 8,704; level 4,608 after); the backward sees the rebuilt down input (8,192), and the
// activation's two grads of that size in place of the rows' grad: 4,608 - 4,096 + 2 x 8,192 =
// 16,896. With the key the activation holds five 16-bit [rows, ffn] there: 4,608 - 4,096 +
// 5 x 8,192 = 41,472.
TEST(Fp8MoeActCache, ActivationBackwardHoldsFiveSixteenBitCopies) {
  ModelSpec m = test::tiny_moe();
  m.moe->expert_ffn_hidden = 128;
  Plan p;
  p.recompute = Recompute::selective;
  p.recompute_modules = 1u << static_cast<int>(RecomputeModule::moe_act);
  const MicroBatchShape mb{1, 16, Dtype::bf16};
  const LayerActivations before = layer_activations(m, p, mb);
  p.fp8_moe_act_cache = true;
  const LayerActivations after = layer_activations(m, p, mb);
  EXPECT_EQ(before.moe_backward, 16896);
  EXPECT_EQ(after.moe_backward, 41472);
}

// The committed scenario fits under DualPipe with the key (its busiest rank, 83.4 GiB without it) and
// not without: the saving is what §3.3.2 (2) gives the 17 chunks in flight.
TEST(Fp8MoeActCache, DeepseekDualpipeFitsOnlyWithTheCache) {
  EXPECT_TRUE(predict_memory(fp8_cache_deepseek("plan.fp8_moe_act_cache=true")).fits);
  EXPECT_FALSE(predict_memory(fp8_cache_deepseek("plan.fp8_moe_act_cache=false")).fits);
}

TEST(Fp8MoeActCache, RefusedWhereNoFrameworkOrPlanCanRunIt) {
  test::expect_refused(fp8_cache_deepseek, {// Megatron-core's moe_act checkpoint keeps the 16-bit fc1 output
                                            {"stack=megatron-core", "stack.fp8_cached_moe_act: false"},
                                            {"training.precision=bf16", "training.precision: fp8"},
                                            {"plan.recompute_modules=[layernorm, mla_up_proj]", "moe_act"},
                                            {"plan.recompute=full", "moe_act"},
                                            {"model.activation=gelu", "model.activation=gelu"}});
  // the controls: the same scenario without the key is accepted on Megatron-core's stack
  EXPECT_NO_THROW(load_scenario_file(std::string(TWINSIM_SOURCE_DIR) + "/scenarios/training/deepseek-v3-h800.yaml",
                                     {"plan.fp8_moe_act_cache=false", "stack=megatron-core"}));
}

}  // namespace
}  // namespace twinsim
