// The software stack's host time (hardware/stack_spec.hpp): a layer's pass takes the longer
// of the device's time and the host's time to issue its ops, the collectives overlapping
// the host's work. Figures derived by hand from the formula's definition.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "models/op_names.hpp"
#include "scenario/load.hpp"
#include "sim/cost/compute_cost.hpp"
#include "sim/report/report.hpp"
#include "sim/training/layer_costs.hpp"
#include "sim/training/training_report.hpp"

namespace twinsim {
namespace {

TEST(Stack, ThePassTakesTheLongerOfHostAndDevice) {
  StackSpec stack;
  stack.host_op_s = 20e-6;
  // 10 ops issued at 20 us: the host needs 200 us. Device: 50 us of compute, 30 us of
  // collectives. The pass takes 200 us, so its compute shows 200 - 30 = 170 us.
  EXPECT_NEAR(issued_compute_s(stack, 50e-6, 30e-6, 10), 170e-6, 1e-12);
  // device 300 us + 30 us > 200 us: the device decides, the host hides behind it
  EXPECT_NEAR(issued_compute_s(stack, 300e-6, 30e-6, 10), 300e-6, 1e-12);
  // the boundary: 170 + 30 = 200 exactly, either reading gives 170
  EXPECT_NEAR(issued_compute_s(stack, 170e-6, 30e-6, 10), 170e-6, 1e-12);
  // no stack: the device alone
  EXPECT_NEAR(issued_compute_s(StackSpec{}, 50e-6, 30e-6, 10), 50e-6, 1e-12);
}

Scenario small_gpt(const std::vector<std::string>& sets) {
  const std::string text = R"(
model: {layers: 4, hidden: 512, heads: 8, vocab: 32000, max_seq_len: 512}
cluster: dgx-a100-80gb
training: {seq_len: 512, global_batch: 8, micro_batch: 1, precision: bf16}
plan: {tp: 2, pp: 1, dp: 1}
)";
  // the device alone, which the tests set stacks against
  return load_scenario_text(text + "stack: none\n", sets);
}

std::size_t compute_ops(const LayerCost& c) {
  std::size_t n = 0;
  for (const OpTime& op : c.ops) n += op.category == TimeCategory::compute ? 1 : 0;
  return n;
}

TEST(Stack, AHostBoundLayerTakesItsOpsTimesTheHostTime) {
  // 1 ms per op dwarfs a 512-wide layer's kernels and its TP all-reduces
  const Scenario s = small_gpt({"stack.host_op_us=1000"});
  const LayerCost layer = cost_layer(s, 0);
  const double ops = static_cast<double>(compute_ops(layer));
  ASSERT_GE(ops, 5);
  EXPECT_NEAR(layer.fwd_s(TimeCategory::compute) + layer.fwd_s(TimeCategory::tp_comm), ops * 1e-3, 1e-12);
  EXPECT_NEAR(layer.bwd_s(TimeCategory::compute) + layer.bwd_s(TimeCategory::tp_comm), ops * 1e-3, 1e-12);
  // the collectives themselves are unchanged by the host
  const LayerCost device_only = cost_layer(small_gpt({}), 0);
  EXPECT_DOUBLE_EQ(layer.fwd_s(TimeCategory::tp_comm), device_only.fwd_s(TimeCategory::tp_comm));
  EXPECT_LT(device_only.fwd_s(TimeCategory::compute) + device_only.fwd_s(TimeCategory::tp_comm), ops * 1e-3);
}

TEST(Stack, AHostBoundStepScalesWithTheHostTime) {
  // host-bound at 1 ms and 2 ms per op: the layers' share of the step doubles
  const TrainingPrediction one = predict_training(small_gpt({"stack.host_op_us=1000"}));
  const TrainingPrediction two = predict_training(small_gpt({"stack.host_op_us=2000"}));
  const TrainingPrediction none = predict_training(small_gpt({}));
  EXPECT_GT(one.step_s, 5 * none.step_s);
  EXPECT_NEAR((two.step_s - none.step_s) / (one.step_s - none.step_s), 2.0, 0.1);
}

TEST(Stack, TheGemmLibraryScaleDividesTheGemmRate) {
  // 16k^3 on the catalog A100: compute-bound, so half the rate is twice the math time
  const GpuSpec gpu = catalog_gpu("a100-sxm-80gb");
  ComputeOp op;
  op.kind = ComputeKind::gemm;
  op.dtype = Dtype::fp16;
  op.m = op.n = op.k = 16384;
  op.flops = 2.0 * 16384 * 16384 * 16384;
  op.bytes = 3 * 2.0 * 16384 * 16384;
  const ComputeCost as_measured = op_cost(gpu, op);
  op.library_scale = 0.5;
  const ComputeCost older = op_cost(gpu, op);
  EXPECT_NEAR(older.math_s, 2 * as_measured.math_s, 1e-12);
  EXPECT_GT(older.math_s, older.memory_s);
  // and the stack carries it to a layer's GEMMs, not to its other ops
  const LayerCost base = cost_layer(small_gpt({}), 0);
  const LayerCost scaled = cost_layer(small_gpt({"stack.gemm_library_scale=0.5"}), 0);
  int seen = 0;
  for (std::size_t i = 0; i < base.ops.size(); ++i) {
    if (base.ops[i].name == "attn.norm") {
      EXPECT_DOUBLE_EQ(scaled.ops[i].fwd_s, base.ops[i].fwd_s);
      ++seen;
    }
    if (base.ops[i].name == "mlp.fc1") {
      EXPECT_GT(scaled.ops[i].fwd_s, base.ops[i].fwd_s);
      ++seen;
    }
  }
  EXPECT_EQ(seen, 2);  // both ops exist under these names
}

TEST(Stack, CatalogPresetsAndOverrides) {
  EXPECT_EQ(small_gpt({}).stack.name, "none");
  EXPECT_EQ(small_gpt({}).stack.host_op_s, 0);
  EXPECT_FALSE(small_gpt({}).stack_is_default);
  // without `stack:`, training on a catalog GPU gets Megatron-Core's (scenario/default_stack.hpp)
  const Scenario unnamed = load_scenario_text(
      "model: {layers: 4, hidden: 512, heads: 8, vocab: 32000, max_seq_len: 512}\ncluster: dgx-a100-80gb\n"
      "training: {seq_len: 512, global_batch: 8, micro_batch: 1, precision: bf16}\nplan: {tp: 2, pp: 1, dp: 1}\n");
  EXPECT_EQ(unnamed.stack.name, "megatron-core");
  EXPECT_NEAR(unnamed.stack.host_op_s, 110e-6, 1e-12);
  EXPECT_TRUE(unnamed.stack_is_default);
  const Scenario eager = small_gpt({"stack=megatron-eager"});
  EXPECT_EQ(eager.stack.name, "megatron-eager");
  EXPECT_GT(eager.stack.host_op_s, 0);
  const Scenario edited = small_gpt({"stack=megatron-eager", "stack.host_op_us=7"});
  EXPECT_NEAR(edited.stack.host_op_s, 7e-6, 1e-15);
  EXPECT_THROW(small_gpt({"stack=megatron-eagre"}), ScenarioError);
  EXPECT_THROW(small_gpt({"stack.host_op_us=-1"}), ScenarioError);
  EXPECT_THROW(small_gpt({"stack.host_ops_us=1"}), ScenarioError);
  EXPECT_THROW(small_gpt({"stack.gemm_library_scale=0"}), ScenarioError);
  EXPECT_EQ(small_gpt({"stack=megatron-2021"}).stack.gemm_library_scale, 0.86);
  // the serving presets carry the engine's time a pass and a sequence (training ignores them)
  EXPECT_NEAR(small_gpt({"stack=trtllm"}).stack.serving_sequence_s, 6e-6, 1e-15);
  EXPECT_EQ(small_gpt({"stack=trtllm"}).stack.serving_step_s, 0);
  EXPECT_NEAR(small_gpt({"stack=vllm-v0"}).stack.serving_step_s, 4e-3, 1e-15);
  EXPECT_FALSE(small_gpt({"stack=vllm-v0"}).stack.serving_async);
  EXPECT_TRUE(small_gpt({"stack=vllm-v0", "stack.serving_async=true"}).stack.serving_async);
}

// Llama-3-8B, 4k tokens, one layer per GPU's stage: the attention tests' scenario on a
// cluster and a stack ("" for none given).
// `stack` "none" by default: the device alone, FlashAttention-2's curves, which the tests compare against
Scenario llama8b(const std::string& cluster, const std::string& stack = "none",
                 const std::vector<std::string>& sets = {}) {
  std::string text = R"(
model: llama3-8b
training: {seq_len: 4096, global_batch: 8, micro_batch: 1, precision: bf16}
plan: {tp: 1, pp: 1, dp: 8, zero: 1}
)";
  text += "cluster: " + cluster + "\n";
  if (!stack.empty()) text += "stack: " + stack + "\n";
  return load_scenario_text(text, sets);
}

// megatron-core runs Transformer Engine's attention, which prefers cuDNN's fused attention on
// Hopper (attention_kernel: te): the H100's cuDNN curves, FlashAttention-2's on the A100
// (TE's pick there, and the A100 has no cuDNN curve); otherwise megatron-eager's host time.
TEST(Stack, MegatronCoreRunsTransformerEnginesAttention) {
  const auto attention = [](const char* cluster, const char* stack) {
    const LayerCost c = cost_layer(llama8b(cluster, stack), 0);
    for (const OpTime& op : c.ops)
      if (op.name == op_names::kAttnCore) return op.fwd_s;
    ADD_FAILURE() << "no attention row";
    return 0.0;
  };
  EXPECT_DOUBLE_EQ(attention("dgx-h100", "megatron-core"), attention("dgx-h100", "{attention_kernel: cudnn}"));
  EXPECT_DOUBLE_EQ(attention("dgx-a100-80gb", "megatron-core"), attention("dgx-a100-80gb", "none"));
  EXPECT_LT(attention("dgx-h100", "megatron-core"), 0.8 * attention("dgx-h100", "megatron-eager"));
  EXPECT_EQ(llama8b("dgx-h100", "megatron-core").stack.host_op_s, llama8b("dgx-h100", "megatron-eager").stack.host_op_s);
}

// The table names the stack and, where it picks by device, the kernel it runs on this GPU;
// the device alone (none) prints no line.
TEST(Stack, TheReportSaysWhichAttentionTheStackRuns) {
  const auto table = [](const Scenario& s) {
    std::ostringstream out;
    print_report(out, s, memory_report(s));
    return out.str();
  };
  EXPECT_NE(table(llama8b("dgx-h100", "megatron-core"))
                .find("stack megatron-core: host 110 us per op and 2.5 ms per micro-batch, attention te (cudnn on h100-sxm)"),
            std::string::npos);
  EXPECT_NE(table(llama8b("dgx-a100-80gb", "megatron-core")).find("attention te (flash2 on a100-sxm-80gb)"),
            std::string::npos);
  EXPECT_EQ(table(llama8b("dgx-h100")).find("stack "), std::string::npos);
  // an MoE model under a stack that counts the MoE layer's host calls says so, with its costs
  const Scenario moe = load_scenario_text(R"(
model: mixtral-8x7b
training: {seq_len: 4096, global_batch: 16, micro_batch: 1, precision: bf16}
plan: {tp: 1, pp: 1, dp: 16, ep: 8, zero: 1}
cluster: {preset: dgx-h100, nodes: 2}
stack: megatron-core
)");
  EXPECT_NE(table(moe).find("(MoE layers by call: 9.5 us a torch op, 19.6 us a GEMM launch, 9.5 us a collective)"),
            std::string::npos)
      << table(moe);
  EXPECT_EQ(table(llama8b("dgx-h100", "megatron-core")).find("MoE layers by call"), std::string::npos);
  // Megatron keeps bf16 training's gradients in fp32 (grad_reduce_fp32), fp16's in fp16
  EXPECT_NE(table(llama8b("dgx-h100", "megatron-core")).find(", gradients fp32"), std::string::npos);
  EXPECT_EQ(table(llama8b("dgx-h100", "megatron-core", {"training.precision=fp16"})).find("gradients fp32"),
            std::string::npos);
  EXPECT_EQ(table(llama8b("dgx-h100", "deepspeed")).find("gradients fp32"), std::string::npos);
  // a plan that offloads its optimizer shows the stack's host figure for the update
  const Scenario offloaded = llama8b("dgx-h100", "deepspeed", {"plan.offload_optimizer=true"});
  EXPECT_NE(table(offloaded).find(", offloaded update 2.06 ns a parameter"), std::string::npos) << table(offloaded);
  EXPECT_EQ(table(llama8b("dgx-h100", "deepspeed")).find("offloaded update"), std::string::npos);  // not offloaded
}

// attention_kernel picks a flash kernel's curves: on the H100, cuDNN's (measured) run the
// layer's attention faster than FlashAttention-2's and leave every other op alone (but for
// the GEMMs' clock under the power limit, which the lighter mix raises); a GPU
// without that kernel's curves is refused, naming the field.
TEST(Stack, TheAttentionKernelPicksItsCurves) {
  const LayerCost flash2 = cost_layer(llama8b("dgx-h100"), 0);
  const LayerCost cudnn = cost_layer(llama8b("dgx-h100", "", {"stack.attention_kernel=cudnn"}), 0);
  ASSERT_EQ(flash2.ops.size(), cudnn.ops.size());
  int attention = 0;
  for (std::size_t i = 0; i < flash2.ops.size(); ++i) {
    if (flash2.ops[i].name == op_names::kAttnCore) {
      // hd128 at 4k: cuDNN's fwd 0.94-1.17 / bwd 0.61-0.83 against FlashAttention-2's 0.46-0.53
      EXPECT_LT(cudnn.ops[i].fwd_s, 0.6 * flash2.ops[i].fwd_s);
      EXPECT_LT(cudnn.ops[i].dgrad_s, 0.9 * flash2.ops[i].dgrad_s);
      ++attention;
    } else if (flash2.ops[i].tensor_s > 0) {
      // a GEMM: only the power limit's clock, which the layer's mix sets, moves it
      EXPECT_NEAR(cudnn.ops[i].fwd_s / flash2.ops[i].fwd_s, flash2.gemm_clock / cudnn.gemm_clock, 1e-3)
          << flash2.ops[i].name;
    } else {
      EXPECT_DOUBLE_EQ(cudnn.ops[i].fwd_s, flash2.ops[i].fwd_s) << flash2.ops[i].name;
    }
  }
  EXPECT_EQ(attention, 1);
  try {
    llama8b("dgx-a100-80gb", "", {"stack.attention_kernel=cudnn"});
    FAIL() << "an A100 has no cuDNN attention curves";
  } catch (const ScenarioError& e) {
    EXPECT_NE(std::string(e.what()).find("stack.attention_kernel"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("attention_kernel_efficiency_by_seq.cudnn"), std::string::npos) << e.what();
  }
  EXPECT_THROW(llama8b("dgx-h100", "", {"stack.attention_kernel=fa3"}), ScenarioError);
  EXPECT_EQ(llama8b("dgx-h100").stack.attention_kernel, kFlash2Attention);
}

}  // namespace
}  // namespace twinsim
