// MoE parallel folding and expert tensor parallelism (plan.expert_tp), against numbers
// derived by hand from Megatron-core's layout (parallel_state's expert RankGenerator, the
// alltoall token dispatcher) and Qwen3-235B-A22B's config (hidden 4096, 94 layers, all MoE,
// 128 experts of width 1536, top-8; models/catalog/hf/qwen3-235b-a22b.json).
#include <gtest/gtest.h>

#include <algorithm>

#include "models/layer_ops.hpp"
#include "models/op_names.hpp"
#include "scenario/load.hpp"
#include "sim/memory/weights.hpp"
#include "sim/training/rank_layout.hpp"
#include "sim/training/training_report.hpp"

namespace twinsim {
namespace {

// Megatron-Bridge's H100 recipe qwen3_235b_a22b_pretrain_256gpu_h100_bf16_config: 256 GPUs,
// TP 2, PP 8, VP 4, EP 32 (docs.nvidia.com/nemo/megatron-bridge, bridge.perf_recipes.qwen.h100):
// dp = 256 / 16 = 16, so EP 32 spans both TP ranks of 16 DP replicas.
Scenario qwen3_235b(const std::vector<std::string>& sets = {}) {
  std::vector<std::string> all = {"plan.expert_tp=1"};
  all.insert(all.end(), sets.begin(), sets.end());
  return load_scenario_text(R"(
model: qwen3-235b-a22b
cluster: dgx-h100
stack: megatron-core
training: {seq_len: 4096, global_batch: 1024, micro_batch: 1, precision: bf16}
plan: {tp: 2, pp: 8, dp: 16, ep: 32, sequence_parallel: true, zero: 1, schedule: interleaved, virtual_stages: 4,
       recompute: selective, stage_layers: [11, 12, 12, 12, 12, 12, 12, 11]}
)",
                            all);
}

const LayerOp* find(const std::vector<LayerOp>& ops, std::string_view name) {
  const auto it = std::find_if(ops.begin(), ops.end(), [&](const LayerOp& op) { return op.name == name; });
  return it == ops.end() ? nullptr : &*it;
}

constexpr std::int64_t kHidden = 4096, kTopK = 8, kExpertWidth = 1536, kLayers = 94;

TEST(ExpertFolding, Qwen3_235bWithTp2Ep32IsExpressible) {
  const Scenario s = qwen3_235b();
  EXPECT_EQ(s.plan.dp, 16);
  EXPECT_EQ(s.plan.etp(), 1);
  // the ranks holding the same experts: tp*cp*dp / (ep*expert_tp) = 32 / 32
  EXPECT_EQ(s.plan.expert_dp_group_size(), 1);
  // without folding (expert_tp = tp) EP 32 x ETP 2 = 64 would not divide the stage's 32 ranks
  EXPECT_THROW(qwen3_235b({"plan.expert_tp=2"}), ScenarioError);
}

// Each GPU: 128 / 32 = 4 experts per layer, whole (ETP 1): 3 x 4096 x 1536 each (gate, up, down).
TEST(ExpertFolding, ExpertWeightsSplitOverEpAndExpertTp) {
  const Scenario s = qwen3_235b();
  const std::int64_t per_layer = 4 * 3 * kHidden * kExpertWidth;  // 75,497,472
  EXPECT_EQ(layer_params_on_gpu(s.model, s.plan, true).expert, per_layer);
  // EP 16 x ETP 2 over the same 32 ranks: 8 experts of half width, the same count per GPU
  const Scenario etp2 = qwen3_235b({"plan.ep=16", "plan.expert_tp=2"});
  EXPECT_EQ(layer_params_on_gpu(etp2.model, etp2.plan, true).expert, 8 * 3 * kHidden * (kExpertWidth / 2));
  EXPECT_EQ(etp2.plan.expert_dp_group_size(), 1);
  // EP 8 x ETP 1: 16 experts each, held by 32 / 8 = 4 ranks
  const Scenario ep8 = qwen3_235b({"plan.ep=8"});
  EXPECT_EQ(layer_params_on_gpu(ep8.model, ep8.plan, true).expert, 16 * 3 * kHidden * kExpertWidth);
  EXPECT_EQ(ep8.plan.expert_dp_group_size(), 4);
}

// The distributed optimizer shards the dense states over dp*cp = 16 ranks and the experts'
// over the expert-data-parallel group: 4 ranks at EP 8 (12 bytes per parameter: fp32 master,
// Adam's two moments; Megatron's fp32 grads: 4 bytes, unsharded under ZeRO-1).
TEST(ExpertFolding, ExpertOptimizerStatesShardOverTheExpertDataParallelGroup) {
  const Scenario s = qwen3_235b({"plan.ep=8"});
  const StageParams p = stage_params(s.model, s.plan, 1);  // a middle stage: 94 / 8 layers, no embedding
  const std::int64_t layers = p.expert / (16 * 3 * kHidden * kExpertWidth);
  EXPECT_EQ(p.expert, layers * 16 * 3 * kHidden * kExpertWidth);
  const WeightMemory w = training_weight_memory(s.model, s.plan, s.stack, s.cluster.gpu, *s.training, 1);
  EXPECT_EQ(w.optimizer, 12 * ((p.dense + 15) / 16) + 12 * ((p.expert + 3) / 4));
  EXPECT_EQ(w.grads, 4 * (p.dense + p.expert));
  EXPECT_EQ(w.params, 2 * (p.dense + p.expert));
}

// Megatron-core's alltoall dispatcher under SP: each rank routes its own 4096 / 2 = 2048
// tokens; the all-to-all carries top-8 copies of their rows (bf16), with no TP gather before
// the experts (Qwen3 has no shared experts); ETP 2 all-gathers the dispatched rows over the
// experts' TP group, doubling the rows each expert GEMM sees.
TEST(ExpertFolding, DispatchAndExpertTpCollectivesCarryTheDispatchersBytes) {
  const Scenario s = qwen3_235b();
  const MicroBatchShape mb{1, 4096, Dtype::bf16};
  const std::vector<LayerOp> ops = build_layer_ops(s.model, 0, s.plan, mb);
  const std::int64_t own = 4096 / 2;
  const LayerOp* dispatch = find(ops, op_names::kMoeDispatch);
  ASSERT_NE(dispatch, nullptr);
  EXPECT_EQ(dispatch->fwd_comm.bytes, own * kTopK * kHidden * 2);  // 128 MiB
  EXPECT_EQ(dispatch->fwd_comm.group, CommGroup::ep);
  EXPECT_EQ(find(ops, op_names::kMoeEtpGather), nullptr);
  EXPECT_EQ(find(ops, op_names::kMlpTpEnter), nullptr);
  EXPECT_EQ(find(ops, op_names::kMlpTpExit), nullptr);
  const LayerOp* up = find(ops, op_names::kMoeExpertsGateUp);
  ASSERT_NE(up, nullptr);
  EXPECT_EQ(up->count, 4);
  EXPECT_EQ(up->m, own * kTopK / 4);  // 4,096 rows per local expert
  EXPECT_EQ(up->n, 2 * kExpertWidth);

  const Scenario etp2 = qwen3_235b({"plan.ep=16", "plan.expert_tp=2"});
  const std::vector<LayerOp> folded = build_layer_ops(etp2.model, 0, etp2.plan, mb);
  EXPECT_EQ(find(folded, op_names::kMoeDispatch)->fwd_comm.bytes, own * kTopK * kHidden * 2);
  const LayerOp* gather = find(folded, op_names::kMoeEtpGather);
  const LayerOp* scatter = find(folded, op_names::kMoeEtpScatter);
  ASSERT_NE(gather, nullptr);
  ASSERT_NE(scatter, nullptr);
  EXPECT_EQ(gather->fwd_comm.kind, CollectiveKind::all_gather);
  EXPECT_EQ(gather->bwd_comm.kind, CollectiveKind::reduce_scatter);
  EXPECT_EQ(scatter->fwd_comm.kind, CollectiveKind::reduce_scatter);
  EXPECT_EQ(gather->fwd_comm.group, CommGroup::etp);
  EXPECT_EQ(gather->fwd_comm.bytes, 2 * own * kTopK * kHidden * 2);  // both ETP ranks' rows
  const LayerOp* folded_up = find(folded, op_names::kMoeExpertsGateUp);
  EXPECT_EQ(folded_up->count, 8);
  EXPECT_EQ(folded_up->m, 2 * own * kTopK / 8);
  EXPECT_EQ(folded_up->n, 2 * kExpertWidth / 2);
  // the same expert FLOPs either way: the work is split, not repeated
  EXPECT_DOUBLE_EQ(up->fwd_flops, folded_up->fwd_flops);
}

// Where the groups sit on 8-GPU nodes: expert TP innermost, EP expert_tp apart, the expert
// data-parallel group expert_tp x ep apart (Megatron-core's expert order tp-ep-dp-pp).
TEST(ExpertFolding, ExpertGroupsAreLaidOutInMegatronsExpertOrder) {
  const Scenario s = qwen3_235b();
  const GroupLayout ep = group_layout(s.cluster, s.plan, ParallelGroup::ep);
  EXPECT_EQ(ep.ranks, 32);
  EXPECT_EQ(ep.ranks_per_node, 8);  // consecutive ranks: 4 nodes
  const Scenario ep8 = qwen3_235b({"plan.ep=8"});
  const GroupLayout edp = group_layout(ep8.cluster, ep8.plan, ParallelGroup::expert_dp);
  EXPECT_EQ(edp.ranks, 4);
  EXPECT_EQ(edp.ranks_per_node, 1);  // 8 apart
  const Scenario etp2 = qwen3_235b({"plan.ep=8", "plan.expert_tp=2"});
  EXPECT_EQ(group_layout(etp2.cluster, etp2.plan, ParallelGroup::etp).ranks_per_node, 2);
  const GroupLayout ep_strided = group_layout(etp2.cluster, etp2.plan, ParallelGroup::ep);
  EXPECT_EQ(ep_strided.ranks_per_node, 4);  // 2 apart: 4 of the 8 on a node
}

// Without SP on a TP group (ep 1, expert_tp = tp) the experts keep the dense MLP's TP region:
// every TP rank holds every token, as before folding (and as the executor runs it).
TEST(ExpertFolding, TpWithoutSequenceParallelKeepsTheTpRegion) {
  const Scenario s = load_scenario_text(R"(
model: mixtral-8x7b
cluster: dgx-h100
training: {seq_len: 4096, global_batch: 64, micro_batch: 1}
plan: {tp: 2, pp: 4, sequence_parallel: false}
)");
  const std::vector<LayerOp> ops = build_layer_ops(s.model, 0, s.plan, {1, 4096, Dtype::bf16});
  EXPECT_NE(find(ops, op_names::kMlpTpEnter), nullptr);
  EXPECT_EQ(find(ops, op_names::kMoeEtpGather), nullptr);
  const LayerOp* up = find(ops, op_names::kMoeExpertsGateUp);
  EXPECT_EQ(up->m, 4096 * 2 / 8);  // all 4096 tokens, top-2 of 8 experts
  EXPECT_EQ(up->n, 2 * 14336 / 2);
}

// The folded plan simulates end to end, its expert communication in the EP category, and
// simulating every GPU (replica symmetry over the folded expert groups) agrees with one per stage
// on the compute and the expert communication of the reported GPU.
TEST(ExpertFolding, FoldedPlanSimulates) {
  const Scenario s = qwen3_235b({"training.global_batch=128"});
  const TrainingPrediction fast = predict_training(s);
  EXPECT_GT(fast.step_s, 0);
  EXPECT_GT(fast.breakdown.ep_comm_s, 0);
  const TrainingPrediction full = predict_training(s, "", Fidelity::full);
  EXPECT_NEAR(full.breakdown.compute_s, fast.breakdown.compute_s, 1e-9 * fast.breakdown.compute_s);
  EXPECT_GT(full.breakdown.ep_comm_s, 0);
}

}  // namespace
}  // namespace twinsim
