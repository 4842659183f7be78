// A step's kernel calls, recorded on the executor's backend (exec/runtime/step_recorder.hpp),
// against the simulator's op list for the same plan (models/layer_ops.hpp, which sim/ costs):
// every GEMM op of every layer runs in the executor under the same name, with the FLOPs the
// op list gives it, forward, input-gradient and weight-gradient apart, and again as
// `recompute` when the plan recomputes it. The executor's model and the op list are separate
// code; a layer the executor runs differently from the prediction fails here.
// Single rank; the collectives of DP, TP+SP, PP, ZeRO-3 and EP are recorded under MPI
// (tests/exec_mpi/record_mpi.cpp).
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "exec/model/transformer.hpp"
#include "exec/runtime/backend.hpp"
#include "exec/runtime/profiler.hpp"
#include "exec/runtime/step_recorder.hpp"
#include "models/layer_ops.hpp"
#include "models/op_names.hpp"
#include "tiny_models.hpp"

namespace twinsim::exec {
namespace {

// The simulator's description of the plan the stage runs (one rank).
Plan plan_of(const TransformerConfig& c) {
  Plan plan;
  plan.recompute = c.recompute;
  plan.flash_attention = c.flash_attention;
  return plan;
}

// One forward and backward of a micro-batch (recorded by whatever StepRecorder observes the table).
void record_step(const TransformerConfig& c) {
  TransformerStage stage(c);
  stage.initialize();
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> token(0, static_cast<int>(c.model.vocab) - 1);
  MicroBatchState st;
  for (int i = 0; i < c.tokens(); ++i) st.tokens.push_back(token(rng));
  for (int i = 0; i < c.tokens(); ++i) st.targets.push_back(token(rng));
  Profiler profiler;  // names the ops
  ModelContext ctx;
  ctx.profiler = &profiler;
  stage.forward(ctx, Tensor(), st);
  stage.backward(ctx, Tensor(), 1.0f, st);
}

// Every GEMM op of the op list ran with its FLOPs in each pass; returns how many were checked.
int expect_gemms_match(const TransformerConfig& c) {
  StepRecorder recorder(current_backend().kernels());
  record_step(c);
  const MicroBatchShape shape{c.micro_batch, c.seq_len, c.storage};
  int checked = 0;
  for (int layer = c.first_layer; layer < c.end_layer; ++layer) {
    for (const LayerOp& op : build_layer_ops(c.model, layer, plan_of(c), shape)) {
      if (op.kind != OpKind::gemm) continue;
      const auto name = [&](op_names::OpPass pass) { return op_names::op_name(layer, op.name, pass); };
      EXPECT_DOUBLE_EQ(recorder.flops_of(name(op_names::OpPass::fwd)), op.fwd_flops) << name(op_names::OpPass::fwd);
      EXPECT_DOUBLE_EQ(recorder.flops_of(name(op_names::OpPass::bwd_dgrad)), op.dgrad_flops)
          << name(op_names::OpPass::bwd_dgrad);
      EXPECT_DOUBLE_EQ(recorder.flops_of(name(op_names::OpPass::bwd_wgrad)), op.wgrad_flops)
          << name(op_names::OpPass::bwd_wgrad);
      EXPECT_DOUBLE_EQ(recorder.flops_of(name(op_names::OpPass::recompute)), op.recomputed ? op.fwd_flops : 0.0)
          << name(op_names::OpPass::recompute);
      ++checked;
    }
  }
  return checked;
}

TEST(RecordedOps, GptLayersRunTheOpListsGemms) { EXPECT_EQ(expect_gemms_match(test::tiny_gpt_config()), 2 * 4); }

TEST(RecordedOps, LlamaLayersRunTheOpListsGemms) { EXPECT_GT(expect_gemms_match(test::tiny_llama_config()), 0); }

TEST(RecordedOps, FullRecomputeRunsEveryForwardGemmAgain) {
  TransformerConfig c = test::tiny_llama_config();
  c.recompute = Recompute::full;
  EXPECT_GT(expect_gemms_match(c), 0);
}

TEST(RecordedOps, SelectiveRecomputeRunsOnlyTheOpListsRecomputedOps) {
  TransformerConfig c = test::tiny_gpt_config();
  c.flash_attention = false;
  c.recompute = Recompute::selective;
  EXPECT_GT(expect_gemms_match(c), 0);
}

// The router's weight gradient once ran inside its input gradient's op (moe.router.bwd_dgrad
// had both GEMMs, bwd_wgrad none): found by this test.
TEST(RecordedOps, MoeLayersRunTheOpListsGemms) { EXPECT_GT(expect_gemms_match(test::tiny_moe_config()), 0); }

TEST(RecordedOps, MlaLayersRunTheOpListsGemms) { EXPECT_GT(expect_gemms_match(test::tiny_mla_config()), 0); }
TEST(RecordedOps, MlaWithoutAQBottleneckRunsTheOpListsGemms) {
  EXPECT_GT(expect_gemms_match(test::tiny_mla_config(false)), 0);
}

// The recording itself: the norm op of a layer calls the norm kernel the op list names.
TEST(RecordedOps, TheNormOpCallsTheOpListsNormKernel) {
  const TransformerConfig c = test::tiny_llama_config();
  StepRecorder recorder(current_backend().kernels());
  record_step(c);
  bool found = false;
  for (const RecordedOp& op : recorder.ops())
    if (op.name == op_names::op_name(0, op_names::kAttnNorm, op_names::OpPass::fwd)) {
      found = true;
      ASSERT_FALSE(op.kernels.empty());
      EXPECT_EQ(op.kernels.front(), std::string(norm_kernel_name(c.model)) + "_forward");
    }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace twinsim::exec
