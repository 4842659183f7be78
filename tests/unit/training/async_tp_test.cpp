// PyTorch's async TP (stack.tp_overlap: matmul, sim/training/async_tp.hpp): each TP collective
// hides behind the one matmul it is fused with, micro-pipelined in tp chunks. Figures
// derived by hand from the chunked timeline.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "models/op_names.hpp"
#include "scenario/load.hpp"
#include "sim/cost/compute_cost.hpp"
#include "sim/training/async_tp.hpp"
#include "sim/training/layer_costs.hpp"
#include "sim/training/training_report.hpp"

namespace twinsim {
namespace {

TEST(AsyncTp, AChunkedMatmulHidesAllButItsLastChunksShareOfTheCopies) {
  // tp 4, a 4 ms matmul in 1 ms chunks, 6 ms of copies in 2 ms shards: chunk 0 (local) at
  // 0-1, chunk 1 waits for copy 1 (lands at 2) 2-3, chunk 2 at 4-5, chunk 3 at 6-7. The pair
  // takes 7 ms, 3 ms beyond the matmul: 6 - 4 * 3/4.
  EXPECT_NEAR(micro_pipelined_exposed_s(6e-3, 4e-3, 4), 3e-3, 1e-15);
  // copies of 1 ms per shard against 1 ms chunks: chunk k starts as copy k lands, nothing waits
  EXPECT_NEAR(micro_pipelined_exposed_s(3e-3, 4e-3, 4), 0, 1e-15);
  // a matmul longer than the copies hides them whole
  EXPECT_EQ(micro_pipelined_exposed_s(1e-3, 10e-3, 8), 0);
  // tp 1: nothing to pipeline with
  EXPECT_EQ(micro_pipelined_exposed_s(2e-3, 10e-3, 1), 2e-3);
}

// An op list of one TP region: all-gather in, a GEMM, attention, a GEMM, reduce-scatter out.
TEST(AsyncTp, EachCollectiveIsPairedWithItsOwnMatmul) {
  std::vector<LayerOp> ops(5);
  ops[0].kind = OpKind::collective;
  ops[0].fwd_comm = {CollectiveKind::all_gather, CommGroup::tp, 1};
  ops[0].bwd_comm = {CollectiveKind::reduce_scatter, CommGroup::tp, 1};
  ops[1].kind = OpKind::gemm;
  ops[2].kind = OpKind::attention;
  ops[3].kind = OpKind::gemm;
  ops[4].kind = OpKind::collective;
  ops[4].fwd_comm = {CollectiveKind::reduce_scatter, CommGroup::tp, 1};
  ops[4].bwd_comm = {CollectiveKind::all_gather, CommGroup::tp, 1};
  std::vector<OpTime> t(5);
  t[0].fwd_s = t[0].dgrad_s = 4e-3;  // the collectives, 4 ms each way
  t[4].fwd_s = t[4].dgrad_s = 4e-3;
  t[1].fwd_s = 2e-3, t[1].dgrad_s = 8e-3;  // the first GEMM: its dgrad pairs with the backward
  t[2].fwd_s = 100e-3, t[2].dgrad_s = 200e-3;  // attention hides nothing
  t[3].fwd_s = 1e-3, t[3].dgrad_s = 2e-3;
  StackSpec te;  // Transformer Engine's: every collective with its matmul
  const TpExposed e = matmul_paired_tp_exposed(ops, t, 2, te);
  // forward: 4 - 2/2 = 3 ms and 4 - 1/2 = 3.5 ms; backward: 4 - 8/2 = 0 and 4 - 2/2 = 3 ms
  EXPECT_NEAR(e.fwd_s, 6.5e-3, 1e-15);
  EXPECT_NEAR(e.bwd_s, 3e-3, 1e-15);
  // PyTorch's: the entry's reduce-scatter sums the dgrads of the linears it fed, unfused: all
  // 4 ms of it whatever the dgrad beside it; the exit's all-gather as before
  StackSpec torch_async;
  torch_async.async_tp_entry_grad_unfused = true;
  EXPECT_FALSE(micro_pipelined_backward(ops[0], torch_async));
  EXPECT_TRUE(micro_pipelined_backward(ops[4], torch_async));
  EXPECT_TRUE(micro_pipelined_backward(ops[0], te));
  const TpExposed pytorch = matmul_paired_tp_exposed(ops, t, 2, torch_async);
  EXPECT_NEAR(pytorch.bwd_s, 4e-3 + 3e-3, 1e-15);
  EXPECT_NEAR(pytorch.fwd_s, e.fwd_s, 1e-15);
  // nothing recomputed: the recompute waits for nothing
  EXPECT_EQ(e.recompute_s, 0);
  // op-level checkpointing: the all-gather runs again beside the first GEMM's recomputed half
  // (1 ms of its 2): 4 - 1/2 = 3.5 ms waited; the reduce-scatter's output is kept
  ops[0].recomputed = ops[1].recomputed = true;
  t[0].recomputed = t[1].recomputed = true;
  t[1].recompute_share = 0.5;
  EXPECT_NEAR(matmul_paired_tp_exposed(ops, t, 2, te).recompute_s, 3.5e-3, 1e-15);
  // full recompute: every collective against its GEMM's whole forward, as the forward waits
  ops[4].recomputed = ops[3].recomputed = true;
  t[4].recomputed = t[3].recomputed = true;
  t[1].recompute_share = 1;
  const TpExposed full = matmul_paired_tp_exposed(ops, t, 2, te);
  EXPECT_NEAR(full.recompute_s, full.fwd_s, 1e-15);
  // TP without SP all-reduces: nothing to fuse it with, all of it waited for
  ops[4].fwd_comm.kind = CollectiveKind::all_reduce;
  EXPECT_NEAR(matmul_paired_tp_exposed(ops, t, 2, te).fwd_s, 3e-3 + 4e-3, 1e-15);
}

// Sequence parallelism's backward re-gather (Megatron-core issues it before the next GEMM's
// dgrad and waits after it): the entry's backward holds only the gather's excess over that
// dgrad; pricing again replaces it (hide_regathers is idempotent).
TEST(AsyncTp, TheBackwardRegatherHidesBehindTheNextGemmsDgrad) {
  std::vector<LayerOp> ops(3);
  ops[0].kind = OpKind::collective;
  ops[0].fwd_comm = {CollectiveKind::all_gather, CommGroup::tp, 1};
  ops[0].bwd_comm = {CollectiveKind::reduce_scatter, CommGroup::tp, 1};
  ops[0].bwd_regather = {CollectiveKind::all_gather, CommGroup::tp, 1};
  ops[1].kind = OpKind::norm;  // not a GEMM: hides nothing
  ops[2].kind = OpKind::gemm;
  std::vector<OpTime> t(3);
  t[0].dgrad_s = 4e-3;  // the reduce-scatter of the input's gradient
  t[0].regather_s = 5e-3;
  t[1].dgrad_s = 50e-3;
  t[2].dgrad_s = 2e-3;
  hide_regathers(ops, t);
  EXPECT_NEAR(t[0].dgrad_s, 4e-3 + 3e-3, 1e-15);  // 5 ms of gather, 2 ms of it behind the dgrad
  hide_regathers(ops, t);
  EXPECT_NEAR(t[0].dgrad_s, 7e-3, 1e-15);
  t[2].dgrad_s = 6e-3;  // priced again at a lower clock: the GEMM now hides it whole
  hide_regathers(ops, t);
  EXPECT_NEAR(t[0].dgrad_s, 4e-3, 1e-15);
  EXPECT_EQ(t[0].regather_exposed_s, 0);
}

// A layer priced whole: its SP entries' backward time is the reduce-scatter plus the
// re-gather's excess over the GEMM after the entry; without SP there is no re-gather.
TEST(AsyncTp, ASequenceParallelLayerPricesItsRegathers) {
  const std::string text = R"(
model: llama3-8b
cluster: {preset: dgx-h100, nodes: 1}
training: {seq_len: 8192, global_batch: 1, micro_batch: 1, precision: bf16}
plan: {tp: 8, pp: 1, dp: 1, sequence_parallel: true}
)";
  const Scenario s = load_scenario_text(text, {});
  const std::vector<LayerOp> ops = build_layer_ops(s.model, 0, s.plan, {1, 8192, Dtype::bf16});
  const LayerCost cost = cost_layer(s, 0);
  int entries = 0;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].bwd_regather.kind == CollectiveKind::none) continue;
    ++entries;
    const OpTime& entry = cost.ops[i];
    // the all-gather of the whole input costs what the forward's all-gather of it costs
    EXPECT_DOUBLE_EQ(entry.regather_s, entry.fwd_s) << ops[i].name;
    std::size_t g = i + 1;
    while (ops[g].kind != OpKind::gemm) ++g;
    EXPECT_DOUBLE_EQ(entry.regather_exposed_s, std::max(0.0, entry.regather_s - cost.ops[g].dgrad_s)) << ops[i].name;
  }
  EXPECT_EQ(entries, 2);  // attention's and the MLP's entries
}

// torchtitan's op-level checkpointing with TP 8 and SP: the policy's list keeps the
// reduce-scatter's output, so both sequence-parallel all-gathers run again in the recompute,
// each as long as in the forward (same bytes, same group); DTensor's GEMMs keep (or rebuild)
// the gathered input, so no re-gather in the backward, where Megatron's stack re-gathers.
TEST(AsyncTp, OpLevelCheckpointingGathersAgainAndNothingIsRegathered) {
  const std::string text = R"(
model: llama3-8b
cluster: {preset: dgx-h100, nodes: 1}
stack: torchtitan-compile
training: {seq_len: 8192, global_batch: 2, micro_batch: 1, precision: bf16}
plan: {tp: 8, pp: 1, dp: 1, sequence_parallel: true, recompute: selective_op}
)";
  const Scenario s = load_scenario_text(text, {});
  const std::vector<LayerOp> ops = build_layer_ops(s.model, 0, s.plan, {1, 8192, Dtype::bf16});
  const LayerCost cost = cost_layer(s, 0);
  double gathers_s = 0;
  int gathers = 0, collectives = 0;
  std::size_t entry = ops.size();
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].kind != OpKind::collective) continue;
    ++collectives;
    const bool gather = ops[i].fwd_comm.kind == CollectiveKind::all_gather;
    EXPECT_EQ(ops[i].recomputed, gather) << ops[i].name;  // the reduce-scatters' outputs are kept
    EXPECT_EQ(cost.ops[i].regather_s, 0) << ops[i].name;
    if (gather) gathers_s += cost.ops[i].fwd_s, ++gathers, entry = std::min(entry, i);
  }
  EXPECT_EQ(collectives, 4);
  EXPECT_EQ(gathers, 2);
  EXPECT_DOUBLE_EQ(cost.recompute_comm_s(TimeCategory::tp_comm), gathers_s);
  // the step runs each layer's gathers again once a micro-batch, at the forward's time
  const TrainingPrediction p = predict_training(s);
  const auto row = [&](const std::string& name) {
    return *std::find_if(p.ops.begin(), p.ops.end(), [&](const OpPrediction& o) { return o.name == name; });
  };
  const OpPrediction again = row("attn.tp_enter.recompute"), fwd = row("attn.tp_enter.fwd");
  EXPECT_DOUBLE_EQ(again.time_s, fwd.time_s);
  EXPECT_EQ(again.count, 32 * 2);  // 32 layers, 2 micro-batches
  const auto exit_again = [](const OpPrediction& o) { return o.name == "attn.tp_exit.recompute"; };
  EXPECT_FALSE(std::any_of(p.ops.begin(), p.ops.end(), exit_again));
  // Megatron's layers keep the shard: the same plan without DTensor's stack re-gathers
  const Scenario megatron = load_scenario_text(text, {"stack.sp_gather_saved=false"});
  const LayerCost regathering = cost_layer(megatron, 0);
  ASSERT_LT(entry, ops.size());
  EXPECT_GT(regathering.ops[entry].regather_s, 0);
}

Scenario tp8_llama(const std::string& overlap, bool separate_projections = false) {
  const std::string text = R"(
model: llama3-8b
cluster: {preset: dgx-h100, nodes: 1}
training: {seq_len: 8192, global_batch: 4, micro_batch: 4, precision: bf16}
plan: {tp: 8, pp: 1, dp: 1, sequence_parallel: true, tp_comm_overlap: true}
)";
  return load_scenario_text(text, {"stack.tp_overlap=" + overlap, std::string("stack.separate_projections=") +
                                                                      (separate_projections ? "true" : "false")});
}

// On a layer, matmul scope waits for the TP collectives' excess over their matmuls, which the
// step shows as exposed TP time; layer scope hides them behind the whole pass.
TEST(AsyncTp, TheStepWaitsForWhatTheMatmulsDoNotCover) {
  const Scenario layer_scope = tp8_llama("layer"), matmul_scope = tp8_llama("matmul");
  const LayerCost ideal = cost_layer(layer_scope, 0), fused = cost_layer(matmul_scope, 0);
  EXPECT_EQ(ideal.tp_waited_fwd_s, 0);
  EXPECT_GT(fused.tp_waited_fwd_s, 0);
  EXPECT_LT(fused.tp_waited_fwd_s, fused.fwd_s(TimeCategory::tp_comm));
  const TrainingPrediction a = predict_training(layer_scope), b = predict_training(matmul_scope);
  EXPECT_GT(b.step_s, a.step_s);
  EXPECT_GT(b.breakdown.tp_comm_s, a.breakdown.tp_comm_s);
}

// PyTorch's symmetric-memory ops (stack.tp_overlap: symmetric_memory): which passes of which
// GEMM run as tp chunks, and which end with the sum over the stacked partials.
TEST(AsyncTp, SymmetricMemorySplitsTheFusedPassesOnly) {
  std::vector<LayerOp> ops(5);  // all-gather in, GEMM, attention, GEMM, reduce-scatter out
  ops[0].kind = ops[4].kind = OpKind::collective;
  ops[0].fwd_comm = {CollectiveKind::all_gather, CommGroup::tp, 1};
  ops[0].bwd_comm = {CollectiveKind::reduce_scatter, CommGroup::tp, 1};
  ops[4].fwd_comm = {CollectiveKind::reduce_scatter, CommGroup::tp, 1};
  ops[4].bwd_comm = {CollectiveKind::all_gather, CommGroup::tp, 1};
  ops[1].kind = ops[3].kind = OpKind::gemm;
  ops[2].kind = OpKind::attention;
  StackSpec fused_entry_grad, torch_async;
  torch_async.async_tp_entry_grad_unfused = true;
  // the entry's GEMM: forward in 4 chunks; its dgrad fused with the input gradient's
  // reduce-scatter (chunks and a sum), unless PyTorch leaves that reduce-scatter unfused
  const FusedMatmulSplit entry = symmetric_memory_split(ops, 1, 4, fused_entry_grad);
  EXPECT_EQ(entry.fwd_chunks, 4);
  EXPECT_FALSE(entry.fwd_partials_sum);
  EXPECT_EQ(entry.dgrad_chunks, 4);
  EXPECT_TRUE(entry.dgrad_partials_sum);
  const FusedMatmulSplit torch_entry = symmetric_memory_split(ops, 1, 4, torch_async);
  EXPECT_EQ(torch_entry.dgrad_chunks, 1);
  EXPECT_FALSE(torch_entry.dgrad_partials_sum);
  // the exit's GEMM: forward in chunks and summed; its dgrad fused with the output gradient's
  // all-gather (chunks, no sum)
  const FusedMatmulSplit exit = symmetric_memory_split(ops, 3, 4, torch_async);
  EXPECT_EQ(exit.fwd_chunks, 4);
  EXPECT_TRUE(exit.fwd_partials_sum);
  EXPECT_EQ(exit.dgrad_chunks, 4);
  EXPECT_FALSE(exit.dgrad_partials_sum);
  EXPECT_EQ(symmetric_memory_split(ops, 2, 4, torch_async).fwd_chunks, 1);  // attention: not a GEMM
  EXPECT_EQ(symmetric_memory_split(ops, 3, 1, torch_async).fwd_chunks, 1);  // tp 1: nothing fused
  // an m 1024 x n 256 result in bf16 over tp 4: 4 partials of 256 rows read (524,288 bytes), one
  // written (131,072)
  EXPECT_EQ(partials_sum_bytes(1024, 256, 4, 2.0), 524288.0 + 131072.0);
}

// On Llama-3-8B at TP 8 (32,768 tokens a micro-batch): the fused passes priced as the chunks they
// run, each chunk at its own shape's rate; the exits' forward sums as a row of their own.
TEST(AsyncTp, SymmetricMemoryPricesTheChunksAndThePartialSums) {
  const Scenario s = tp8_llama("symmetric_memory", true);
  const LayerCost cost = cost_layer(s, 0);
  const auto row = [&](const char* name) {
    return *std::find_if(cost.ops.begin(), cost.ops.end(), [&](const OpTime& op) { return op.name == name; });
  };
  // one chunk GEMM: m 32,768 / 8 = 4,096 rows, bf16, at the layer's GEMM clock
  const auto chunk_s = [&](std::int64_t n, std::int64_t k) {
    ComputeOp c = gemm_op(Dtype::bf16, 4096, n, k);
    c.clock_scale = cost.gemm_clock;
    return op_time_s(s.cluster.gpu, c);
  };
  // QKV: wq (32 heads x 128 / 8 = 512 columns), wk and wv (8 x 128 / 8 = 128 each), K 4,096,
  // 8 chunks each: 24 GEMMs
  EXPECT_NEAR(row(op_names::kAttnQkv).fwd_s, 8 * (chunk_s(512, 4096) + 2 * chunk_s(128, 4096)), 1e-12);
  EXPECT_EQ(row(op_names::kAttnQkv).fwd_launches, 24);
  // the attention's output projection: 8 chunks of 4,096 x 4,096 x 512 (4,096 / 8 of K), forward
  // and dgrad (4,096 x 512 x 4,096)
  EXPECT_NEAR(row(op_names::kAttnProj).fwd_s, 8 * chunk_s(4096, 512), 1e-12);
  EXPECT_NEAR(row(op_names::kAttnProj).dgrad_s, 8 * chunk_s(512, 4096), 1e-12);
  // gate and up: w1 and w3, 14,336 / 8 = 1,792 columns each
  EXPECT_NEAR(row(op_names::kMlpGateUp).fwd_s, 8 * 2 * chunk_s(1792, 4096), 1e-12);
  // the sums after attn.proj and mlp.down: 32,768 x 4,096 bf16 read (268,435,456 bytes), an
  // eighth written (33,554,432), twice; the entries' input gradients reduce-scatter fused with
  // their dgrads (this stack does not leave them unfused): the same bytes again
  const OpTime& sums = row(op_names::kTpPartialsSum);
  EXPECT_EQ(sums.fwd_bytes, 2 * (268435456.0 + 33554432.0));
  EXPECT_EQ(sums.dgrad_bytes, 2 * (268435456.0 + 33554432.0));
  EXPECT_EQ(sums.fwd_launches, 2);
  EXPECT_EQ(sums.dgrad_launches, 2);
  EXPECT_GT(sums.fwd_s, 0);
  // Transformer Engine's overlap (matmul) runs the whole GEMM and no sum
  const LayerCost te = cost_layer(tp8_llama("matmul"), 0);
  EXPECT_TRUE(
      std::none_of(te.ops.begin(), te.ops.end(), [](const OpTime& op) { return op.name == op_names::kTpPartialsSum; }));
  EXPECT_EQ(std::find_if(te.ops.begin(), te.ops.end(), [](const OpTime& op) { return op.name == op_names::kAttnQkv; })
                ->fwd_launches,
            1);
}

// PyTorch's fused all-gather-matmul copies its local shard into the symmetric-memory buffer
// before the first chunk, on the compute stream, outside the pipeline. Llama-3-8B at TP 8, 4 x
// 8,192 tokens x 4,096 x 2 bytes = 268,435,456 bytes gathered: a shard of 33,554,432 read and
// written, 67,108,864 bytes a fused gather, each a memory-bound copy (the op list's cast kernel).
TEST(AsyncTp, SymmetricMemoryStagesTheLocalShardBeforeEachFusedGather) {
  EXPECT_EQ(shard_staging_bytes({CollectiveKind::all_gather, CommGroup::tp, 268435456}, 8), 67108864.0);
  EXPECT_EQ(shard_staging_bytes({CollectiveKind::reduce_scatter, CommGroup::tp, 268435456}, 8), 0);
  EXPECT_EQ(shard_staging_bytes({CollectiveKind::all_gather, CommGroup::cp, 268435456}, 8), 0);
  const LayerCost cost = cost_layer(tp8_llama("symmetric_memory"), 0);
  const auto staging = std::find_if(cost.ops.begin(), cost.ops.end(),
                                    [](const OpTime& op) { return op.name == op_names::kTpShardStaging; });
  ASSERT_NE(staging, cost.ops.end());
  // forward: the two entries' gathers; backward: the two exits' gathers of the output gradient
  // (the entries' backward is a reduce-scatter: its chunks write the buffer, nothing staged)
  EXPECT_EQ(staging->fwd_bytes, 2 * 67108864.0);
  EXPECT_EQ(staging->dgrad_bytes, 2 * 67108864.0);
  EXPECT_EQ(staging->fwd_launches, 2);
  EXPECT_EQ(staging->dgrad_launches, 2);
  ComputeOp copy;
  copy.kind = ComputeKind::elementwise;
  copy.kernel = kernel_names::kCast;
  copy.bytes = 67108864.0;
  EXPECT_NEAR(staging->fwd_s, 2 * op_time_s(tp8_llama("symmetric_memory").cluster.gpu, copy), 1e-12);
  EXPECT_DOUBLE_EQ(staging->dgrad_s, staging->fwd_s);
  // vanilla TP and Transformer Engine's overlap stage nothing
  for (const LayerCost& other : {cost_layer(tp8_llama("matmul"), 0), cost_layer(tp8_llama("layer"), 0)})
    EXPECT_TRUE(std::none_of(other.ops.begin(), other.ops.end(),
                             [](const OpTime& op) { return op.name == op_names::kTpShardStaging; }));
}

// torchtitan's wq, wk, wv and w1, w3 as separate modules (stack.separate_projections), no async
// TP: each its own GEMM at its own shape in every pass, and one pass summing the input's gradients.
TEST(AsyncTp, SeparateProjectionsRunTheirOwnGemmsAndSumTheirDgrads) {
  const Scenario s = tp8_llama("layer", true);
  const LayerCost cost = cost_layer(s, 0);
  const OpTime& qkv =
      *std::find_if(cost.ops.begin(), cost.ops.end(), [](const OpTime& op) { return op.name == op_names::kAttnQkv; });
  const auto gemm_s = [&](std::int64_t m, std::int64_t n, std::int64_t k, GemmPass pass) {
    ComputeOp c = gemm_op(Dtype::bf16, m, n, k);
    c.pass = pass;
    c.clock_scale = cost.gemm_clock;
    return op_time_s(s.cluster.gpu, c);
  };
  // 32,768 tokens; wq 512 columns on this GPU, wk and wv 128, K 4,096
  EXPECT_NEAR(qkv.fwd_s, gemm_s(32768, 512, 4096, GemmPass::fwd) + 2 * gemm_s(32768, 128, 4096, GemmPass::fwd), 1e-12);
  EXPECT_NEAR(qkv.wgrad_s, gemm_s(4096, 512, 32768, GemmPass::wgrad) + 2 * gemm_s(4096, 128, 32768, GemmPass::wgrad),
              1e-12);
  // dgrads 32,768 x 4,096 over their own inner widths, then the sum: three 32,768 x 4,096 bf16
  // gradients read and one written, 4 x 268,435,456 bytes
  ComputeOp sum;
  sum.kind = ComputeKind::elementwise;
  sum.kernel = kernel_names::kResidual;
  sum.backward = true;
  sum.bytes = 4 * 268435456.0;
  const double dgrads_s = gemm_s(32768, 4096, 512, GemmPass::dgrad) + 2 * gemm_s(32768, 4096, 128, GemmPass::dgrad);
  EXPECT_NEAR(qkv.dgrad_s, dgrads_s + op_time_s(s.cluster.gpu, sum), 1e-12);
  EXPECT_EQ(qkv.fwd_launches, 3);
  EXPECT_EQ(qkv.dgrad_launches, 4);
  EXPECT_EQ(qkv.wgrad_launches, 3);
  // one fused QKV GEMM otherwise (at that layer's own GEMM clock)
  const LayerCost fused = cost_layer(tp8_llama("layer"), 0);
  ComputeOp one = gemm_op(Dtype::bf16, 32768, 768, 4096);
  one.clock_scale = fused.gemm_clock;
  EXPECT_NEAR(
      std::find_if(fused.ops.begin(), fused.ops.end(), [](const OpTime& op) { return op.name == op_names::kAttnQkv; })
          ->fwd_s,
      op_time_s(s.cluster.gpu, one), 1e-12);
}

// torchao's float8 TP (stack.tp_float8_all_gather) gathers fp8: a TP all-gather of the layers'
// fp8 GEMMs' inputs carries 1 byte an element; reduce-scatters and other groups keep theirs.
TEST(AsyncTp, Float8TpGathersOneByteAnElement) {
  StackSpec torchao;
  torchao.tp_float8_all_gather = true;
  const Collective gather{CollectiveKind::all_gather, CommGroup::tp, 1000};  // 500 bf16 elements
  EXPECT_EQ(tp_wire_collective(gather, torchao, Dtype::fp8, Dtype::bf16).bytes, 500);
  EXPECT_EQ(tp_wire_collective(gather, torchao, Dtype::bf16, Dtype::bf16).bytes, 1000);     // a bf16 GEMM
  EXPECT_EQ(tp_wire_collective(gather, StackSpec{}, Dtype::fp8, Dtype::bf16).bytes, 1000);  // TE's stack
  const Collective scatter{CollectiveKind::reduce_scatter, CommGroup::tp, 1000};
  EXPECT_EQ(tp_wire_collective(scatter, torchao, Dtype::fp8, Dtype::bf16).bytes, 1000);
  const Collective cp_gather{CollectiveKind::all_gather, CommGroup::cp, 1000};
  EXPECT_EQ(tp_wire_collective(cp_gather, torchao, Dtype::fp8, Dtype::bf16).bytes, 1000);
}

// On a layer of Llama 3 8B at TP 8 (SP) on a DGX H100, 2 x 8192 tokens x 4096 = 67108864
// elements: the SP all-gathers (the entry's forward, the exit's backward) move 64 MiB in fp8,
// a measured size of the catalog's 8-GPU all-gather (274.95 GB/s busbw,
// hardware/catalog/nodes/dgx-h100.yaml): 67108864 x 7/8 / 274.95e9 s. The reduce-scatters stay
// bf16, 128 MiB, halfway in log(bytes) between 64 MiB (268.59) and 256 MiB (304.60): busbw
// 286.595, 134217728 x 7/8 / 286.595e9 s. Without the key the gather is 128 MiB at (274.95 +
// 322.07) / 2 = 298.51 GB/s. Layout copies off, so the collectives alone are compared.
TEST(AsyncTp, Float8TpPricesTheGathersAtOneByte) {
  const std::string text = R"(
model: llama3-8b
cluster: {preset: dgx-h100, nodes: 1}
stack: {preset: torchtitan-compile, sp_layout_copies: false}
training: {seq_len: 8192, global_batch: 2, micro_batch: 2, precision: fp8}
plan: {tp: 8, pp: 1, dp: 1, sequence_parallel: true, tp_comm_overlap: false}
)";
  const auto op = [](const LayerCost& c, const std::string& name) {
    return *std::find_if(c.ops.begin(), c.ops.end(), [&](const OpTime& t) { return t.name == name; });
  };
  const double fp8_gather_s = 67108864.0 * 7 / 8 / 274.95e9;
  const double bf16_scatter_s = 134217728.0 * 7 / 8 / 286.595e9;
  const LayerCost fp8 = cost_layer(load_scenario_text(text, {"stack.tp_float8_all_gather=true"}), 0);
  EXPECT_NEAR(op(fp8, "attn.tp_enter").fwd_s, fp8_gather_s, 1e-9);
  EXPECT_NEAR(op(fp8, "attn.tp_enter").dgrad_s, bf16_scatter_s, 1e-9);
  EXPECT_NEAR(op(fp8, "mlp.tp_exit").fwd_s, bf16_scatter_s, 1e-9);
  EXPECT_NEAR(op(fp8, "mlp.tp_exit").dgrad_s, fp8_gather_s, 1e-9);
  const LayerCost bf16_wire = cost_layer(load_scenario_text(text, {"stack.tp_float8_all_gather=false"}), 0);
  EXPECT_NEAR(op(bf16_wire, "attn.tp_enter").fwd_s, 134217728.0 * 7 / 8 / 298.51e9, 1e-9);
  EXPECT_NEAR(op(bf16_wire, "attn.tp_enter").dgrad_s, bf16_scatter_s, 1e-9);
}

}  // namespace
}  // namespace twinsim
