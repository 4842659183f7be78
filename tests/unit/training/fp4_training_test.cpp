// FP4 training (training.precision: nvfp4 | mxfp4), against numbers derived by hand from
// Llama-3-8B's config (32 layers, hidden 4096, FFN 14336, vocabulary 128256, untied) and the
// formats' block layouts: NVFP4 16 E2M1 values (0.5 byte each) share one E4M3 scale byte,
// MXFP4 32 share one E8M0 byte (OCP MX v1.0 §5.3; Transformer Engine's NVFP4BlockScaling).
#include <gtest/gtest.h>

#include <string>

#include "models/layer_ops.hpp"
#include "scenario/errors.hpp"
#include "scenario/load.hpp"
#include "sim/memory/activations.hpp"
#include "sim/memory/weights.hpp"
#include "sim/training/layer_costs.hpp"
#include "sim/training/training_report.hpp"

namespace twinsim {
namespace {

constexpr std::int64_t kMatrices = 32 * 218'103'808LL;  // per layer 4096 x 6144 + 4096^2 + 3 x 4096 x 14336
constexpr std::int64_t kOthers = 2 * 128'256LL * 4096 + 65 * 4096;
constexpr std::int64_t kTokens = 2048;

Scenario llama8b(const std::string& precision, const std::string& cluster = "dgx-b200",
                 const std::string& stack = "megatron-core") {
  return load_scenario_text("model: llama3-8b\ncluster: " + cluster +
                            "\ntraining: {seq_len: 2048, global_batch: 8, micro_batch: 1, precision: " + precision +
                            "}\nplan: {tp: 1, pp: 1, dp: 1}\nstack: {preset: " + stack + "}\n");
}

// A Blackwell-like GPU with flat curves, so a GEMM's time is its FLOPs over half the peak and
// a cast's its bytes over the bandwidth: 9,000 TFLOP/s fp4, 8 TB/s, no launch cost.
Scenario flat_gpu_llama8b(const std::string& precision) {
  return load_scenario_text(
      "model: llama3-8b\ntraining: {seq_len: 2048, global_batch: 8, micro_batch: 1, precision: " + precision +
      "}\nplan: {tp: 1, pp: 1, dp: 1}\nstack: {preset: megatron-core}\n"
      "cluster: {preset: dgx-b200, gpu: {memory_GiB: 180, hbm_bandwidth_GBps: 8000, memory_efficiency: 1.0, "
      "peak_tflops: {fp32: 75, bf16: 2250, nvfp4: 9000, mxfp4: 9000}, gemm_efficiency: [[1, 0.5]], "
      "gemm_efficiency_by_dtype: {nvfp4: [[1, 0.5]], mxfp4: [[1, 0.5]]}}}\n");
}

const OpTime& op_named(const LayerCost& c, const std::string& name) {
  for (const OpTime& op : c.ops)
    if (op.name == name) return op;
  throw std::runtime_error("no op " + name);
}

std::int64_t params_bytes(const Scenario& s) {
  return training_weight_memory(s.model, s.plan, s.stack, s.cluster.gpu, *s.training, 0).params;
}

// The bf16 model (2 bytes a parameter) and, per weight-matrix parameter, TE's rowwise and
// columnwise fp4 copies: nvfp4 2 x (0.5 + 1/16) = 1.125 bytes, mxfp4 2 x (0.5 + 1/32) = 1.0625.
TEST(Fp4Training, WeightCopiesAreRowwiseAndColumnwiseWithTheirScales) {
  EXPECT_EQ(params_bytes(llama8b("nvfp4")), 2 * (kMatrices + kOthers) + kMatrices * 9 / 8);
  EXPECT_EQ(params_bytes(llama8b("mxfp4")), 2 * (kMatrices + kOthers) + kMatrices * 17 / 16);
  // the fp32 master weights and Adam's moments as any 16-bit run keeps them
  const Scenario s = llama8b("nvfp4");
  EXPECT_EQ(training_weight_memory(s.model, s.plan, s.stack, s.cluster.gpu, *s.training, 0).optimizer,
            12 * (kMatrices + kOthers));
}

// TE keeps a GEMM's quantised input for its wgrad: the QKV's [2048, 4096] input in nvfp4 is
// 2048 x 4096 x 9/16 bytes, in mxfp4 x 17/32, against 2 bytes an element in bf16.
TEST(Fp4Training, GemmInputsAreKeptInFourBitsWithTheirScales) {
  const auto kept = [](const MicroBatchShape& mb) {
    for (const LayerOp& op : build_layer_ops(llama8b("bf16").model, 0, Plan{}, mb))
      if (op.name == "attn.qkv")
        for (const SavedTensor& t : op.saved)
          if (t.name == "input") return t.bytes;
    return std::int64_t{-1};
  };
  MicroBatchShape mb{1, kTokens, Dtype::bf16};
  EXPECT_EQ(kept(mb), kTokens * 4096 * 2);
  mb.quantized_gemm_inputs = Dtype::nvfp4;
  EXPECT_EQ(kept(mb), kTokens * 4096 * 9 / 16);
  mb.quantized_gemm_inputs = Dtype::mxfp4;
  EXPECT_EQ(kept(mb), kTokens * 4096 * 17 / 32);
}

// mlp.down, [2048 x 14336] x [14336 x 4096]: its forward is the fp4 GEMM, 2 m n k FLOPs at
// half of 9,000 TFLOP/s, and the cast of its bf16 input: read (2 bytes), for nvfp4 read again
// for the tensor's amax (2), write the rowwise and columnwise copies (2 x 9/16) = 5.125 bytes
// an element; mxfp4 (no per-tensor scale) 2 + 2 x 17/32 = 3.0625. The backward casts the
// [2048 x 4096] output gradient the same way; all three GEMMs run in fp4.
TEST(Fp4Training, LayerGemmsRunInFp4AndPayTheirCasts) {
  const double flops = 2.0 * kTokens * 14336 * 4096;
  const double gemm_s = flops / (9000e12 * 0.5);
  for (const auto& [precision, per_element] : {std::pair{"nvfp4", 5.125}, std::pair{"mxfp4", 3.0625}}) {
    const OpTime& down = op_named(cost_layer(flat_gpu_llama8b(precision), 0), "mlp.down");
    const double fwd_cast_s = per_element * kTokens * 14336 / 8e12;
    const double bwd_cast_s = per_element * kTokens * 4096 / 8e12;
    EXPECT_NEAR(down.fwd_s, gemm_s + fwd_cast_s, 1e-12) << precision;
    EXPECT_NEAR(down.dgrad_s, gemm_s + bwd_cast_s, 1e-12) << precision;
    EXPECT_NEAR(down.wgrad_s, gemm_s, 1e-12) << precision;
    EXPECT_EQ(down.fwd_launches, 2) << precision;  // the cast and the GEMM
  }
}

// On the catalog's B200 (its fp4 curve fitted to cuBLASLt's FP4 squares) a layer's GEMMs are
// faster in nvfp4 than in fp8, and the step with them (on the device alone, stack none: the
// megatron-core stack's host time bounds this small 2048-token layer).
TEST(Fp4Training, Fp4StepIsFasterThanFp8OnBlackwell) {
  const LayerCost fp8 = cost_layer(llama8b("fp8"), 0);
  const LayerCost fp4 = cost_layer(llama8b("nvfp4"), 0);
  EXPECT_LT(op_named(fp4, "mlp.down").wgrad_s, op_named(fp8, "mlp.down").wgrad_s);
  EXPECT_LT(predict_training(llama8b("nvfp4", "dgx-b200", "none")).step_s,
            predict_training(llama8b("fp8", "dgx-b200", "none")).step_s);
}

// Hopper has no fp4 tensor cores: refused, naming the field.
TEST(Fp4Training, RefusedOnHopper) {
  for (const char* precision : {"nvfp4", "mxfp4"}) {
    try {
      llama8b(precision, "dgx-h100");
      ADD_FAILURE() << precision << " on an H100 was accepted";
    } catch (const ScenarioError& e) {
      EXPECT_NE(std::string(e.what()).find("training.precision"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("fp4 tensor cores"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace twinsim
