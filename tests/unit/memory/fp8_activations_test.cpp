// What plan.fp8_activation_input (Megatron-core's activation_func_fp8_input_store, NeMo's FP8_ACT)
// and plan.fp8_attention (fp8_dot_product_attention, FP8_DPA) keep in fp8 instead of 16 bits, per
// layer and micro-batch, derived by hand at Llama 2 70B (h 8192, 64 heads of 128, 8 KV heads, ffn
// 28672), TP 1, one sequence of 8192 tokens: the MLPerf v5.0 LoRA run's layer.
#include <gtest/gtest.h>

#include <string_view>

#include "models/layer_ops.hpp"
#include "sim/memory/activations.hpp"
#include "tests/unit/memory/test_models.hpp"

namespace twinsim {
namespace {

constexpr std::int64_t kTokens = 8192, kHidden = 8192, kFfn = 28672, kHeads = 64, kKvCols = 8 * 128;

MicroBatchShape shape(bool fp8_gemms) {
  MicroBatchShape mb{1, kTokens, Dtype::bf16};
  if (fp8_gemms) mb.quantized_gemm_inputs = Dtype::fp8;
  return mb;
}

std::int64_t saved(const std::vector<LayerOp>& ops, std::string_view op, std::string_view tensor) {
  for (const LayerOp& o : ops)
    if (o.name == op)
      for (const SavedTensor& t : o.saved)
        if (t.name == tensor) return t.bytes;
  return 0;
}

// SwiGLU keeps its input, gate and up [8192, 28672] each, in fp8: 1 byte instead of 2, so the layer
// keeps 2 x 8192 x 28672 = 469,762,048 bytes (448 MiB) less; nothing else moves.
TEST(Fp8Activations, SwigluInputInFp8SavesOneByteAnElementOfGateAndUp) {
  Plan p;
  const std::vector<LayerOp> before = build_layer_ops(test::llama2_70b(), 0, p, shape(false));
  p.fp8_activation_input = true;
  const std::vector<LayerOp> after = build_layer_ops(test::llama2_70b(), 0, p, shape(false));
  EXPECT_EQ(saved(after, "mlp.act", "gate"), kTokens * kFfn);
  EXPECT_EQ(saved(after, "mlp.act", "up"), kTokens * kFfn);
  EXPECT_EQ(saved_bytes(before) - saved_bytes(after), 469762048);
}

// Its backward casts the fp8 input back to 16 bits beside the 16-bit grads of gate and up: on top
// of the kept tensors, dy (2 x 8192 x 8192 = 134,217,728) + grads (2 x 8192 x 57344 = 939,524,096)
// + the cast-back copy (939,524,096) = 2,013,265,920, where the 16-bit store's backward holds dy
// and the grads alone (1,073,741,824). The MLP's point is the layer's largest either way.
TEST(Fp8Activations, SwigluBackwardHoldsTheCastBackCopy) {
  Plan p;
  EXPECT_EQ(layer_backward_bytes(test::llama2_70b(), 0, p, shape(false)), 1073741824);
  p.fp8_activation_input = true;
  EXPECT_EQ(layer_backward_bytes(test::llama2_70b(), 0, p, shape(false)), 2013265920);
}

// fp8 training, no LoRA. 16-bit attention: Q 2 x 8192 x 8192 = 134,217,728, K and V 2 x 8192 x 1024
// = 16,777,216 each, the logsumexp 4 x 64 x 8192 = 2,097,152, and O kept in 16 bits by the output
// projection (134,217,728). fp8 attention: Q, K, V, O at 1 byte (67,108,864 + 2 x 8,388,608 +
// 67,108,864), M and ZInv 8 x 64 x 8192 = 4,194,304, and the projection's own fp8 O (67,108,864).
// Saved: 8192 x (8192 + 2048) - 4 x 64 x 8192 = 83,886,080 - 2,097,152 = 81,788,928 bytes.
TEST(Fp8Activations, Fp8AttentionKeepsFp8QkvoAndTwoStatistics) {
  Plan p;
  const std::vector<LayerOp> before = build_layer_ops(test::llama2_70b(), 0, p, shape(true));
  p.fp8_attention = true;
  const std::vector<LayerOp> after = build_layer_ops(test::llama2_70b(), 0, p, shape(true));
  EXPECT_EQ(saved(after, "attn.core", "q"), kTokens * kHidden);
  EXPECT_EQ(saved(after, "attn.core", "k"), kTokens * kKvCols);
  EXPECT_EQ(saved(after, "attn.core", "out"), kTokens * kHidden);
  EXPECT_EQ(saved(after, "attn.core", "softmax_stats"), 8 * kHeads * kTokens);
  EXPECT_EQ(saved(after, "attn.core", "logsumexp"), 0);
  EXPECT_EQ(saved(after, "attn.proj", "input"), kTokens * kHidden);
  EXPECT_EQ(saved_bytes(before) - saved_bytes(after), 81788928);
}

// LoRA on q, k, v, o over an fp8 base (the MLPerf run): an adapted GEMM keeps its input in 16 bits
// for the adapter's A (2 x 8192 x 8192 = 134,217,728 at the QKV GEMM, where the fp8 GEMM's own copy
// would be half). Under fp8 attention O is kept twice, fp8 by the attention (67,108,864) and 16-bit
// by the o adapter (134,217,728): the 81,788,928 above less the fp8 O's 67,108,864 = 14,680,064.
TEST(Fp8Activations, LoraAdaptersKeepSixteenBitInputsBesideFp8Attention) {
  Plan p;
  MicroBatchShape mb = shape(true);
  mb.lora = LoraSpec{16, 32, 0, LoraBase::fp8};
  for (LoraModule m : {LoraModule::q, LoraModule::k, LoraModule::v, LoraModule::o})
    mb.lora->modules |= 1u << static_cast<int>(m);
  const std::vector<LayerOp> before = build_layer_ops(test::llama2_70b(), 0, p, mb);
  EXPECT_EQ(saved(before, "attn.qkv", "input"), 2 * kTokens * kHidden);
  p.fp8_attention = true;
  const std::vector<LayerOp> after = build_layer_ops(test::llama2_70b(), 0, p, mb);
  EXPECT_EQ(saved(after, "attn.proj", "input"), 2 * kTokens * kHidden);
  EXPECT_EQ(saved_bytes(before) - saved_bytes(after), 14680064);
}

}  // namespace
}  // namespace twinsim
