// Expert-parallel serving (plan.ep > 1 with an inference section): the MoE layer's
// dispatch and combine, the experts one GPU runs, and what the pass reads, by hand.
#include <gtest/gtest.h>

#include <string_view>

#include "models/op_names.hpp"
#include "scenario/build.hpp"
#include "scenario/load.hpp"
#include "sim/inference/batch_prediction.hpp"
#include "sim/inference/iteration_cost.hpp"
#include "sim/inference/iteration_ops.hpp"
#include "tests/unit/memory/test_models.hpp"

namespace twinsim {
namespace {

using test::tiny_moe;

const LayerOp* find(const std::vector<LayerOp>& ops, std::string_view name) {
  for (const LayerOp& op : ops)
    if (op.name == name) return &op;
  return nullptr;
}

TEST(ExpertParallelServing, DecodeDispatchesAndRunsTheLocalExperts) {
  Plan plan;
  plan.dp = 2, plan.ep = 2;
  InferenceWorkload w;
  const std::vector<LayerOp> ops = build_iteration_layer_ops(tiny_moe(), 1, plan, w, decode_shape(1, 100));
  const LayerOp* dispatch = find(ops, op_names::kMoeDispatch);
  ASSERT_NE(dispatch, nullptr);
  EXPECT_EQ(dispatch->fwd_comm.group, CommGroup::ep);
  EXPECT_EQ(dispatch->fwd_comm.kind, CollectiveKind::all_to_all);
  EXPECT_EQ(dispatch->fwd_comm.bytes, 1 * 2 * 64 * 2);  // 1 token x top 2 x h 64 x 2 B
  ASSERT_NE(find(ops, op_names::kMoeCombine), nullptr);
  // before it, the row counts: 8 experts' 4-byte counts, what one rank sends
  const LayerOp* counts = find(ops, op_names::kMoeCounts);
  ASSERT_NE(counts, nullptr);
  EXPECT_EQ(counts->fwd_comm.kind, CollectiveKind::all_to_all);
  EXPECT_EQ(counts->fwd_comm.group, CommGroup::ep);
  EXPECT_EQ(counts->fwd_comm.bytes, 8 * 4);
  EXPECT_LT(counts, dispatch);
  // 2 tokens (one per replica) touch 8 (1 - (6/8)^2) = 3.5 experts, 1.75 of this GPU's 4:
  // 2 grouped GEMMs of one row each (2 routed rows over 2 experts)
  const LayerOp* gate_up = find(ops, op_names::kMoeExpertsGateUp);
  ASSERT_NE(gate_up, nullptr);
  EXPECT_EQ(gate_up->count, 2);
  EXPECT_EQ(gate_up->m, 1);
  EXPECT_EQ(gate_up->weight_bytes, 2 * 64 * (2 * 32) * 2);  // 2 experts' [64 x 64] in bf16
  // without EP the replica runs its own 2 routed rows over 8 (1 - 6/8) = 2 experts, no all-to-all
  plan.ep = 1;
  const std::vector<LayerOp> tp_ops = build_iteration_layer_ops(tiny_moe(), 1, plan, w, decode_shape(1, 100));
  EXPECT_EQ(find(tp_ops, op_names::kMoeDispatch), nullptr);
  EXPECT_EQ(find(tp_ops, op_names::kMoeCounts), nullptr);
  EXPECT_EQ(find(tp_ops, op_names::kMoeExpertsGateUp)->count, 2);
}

// A decode step's EP time per MoE layer: the counts' all-to-all (32 B), then the dispatch's
// and the combine's (1 token x top 2 x h 64 x 2 B = 256 B each), on a 2-GPU all-to-all curve
// measured at those sizes: 32 x 1/2 / 16 MB/s = 1 us; 256 x 1/2 / 64 MB/s = 2 us. tiny_moe's
// 2 layers are both MoE: 2 x (1 + 2 + 2) = 10 us.
TEST(ExpertParallelServing, DecodePaysTheCountsExchangeBeforeTheDispatch) {
  Scenario s;
  s.model = tiny_moe();
  s.cluster = catalog_cluster("dgx-h100");
  s.cluster.intra_node.measured_busbw["all_to_all"][2] = {{32, 16e6}, {256, 64e6}};
  s.plan.dp = 2, s.plan.ep = 2;
  InferenceWorkload w;
  w.batch = 1, w.prompt_len = 99, w.output_len = 4;
  s.inference = w;
  const ServingCostModel model(validated_scenario(s));
  EXPECT_NEAR(model.cost(decode_shape(1, 100)).ep_comm_s, 10e-6, 1e-12);
}

TEST(ExpertParallelServing, ServesAModelTooLargeForOneReplica) {
  // DeepSeek-V3 in fp8 on 4 H800 nodes: TP 8 alone holds 1/8 of every expert per GPU
  // (over 80 GB: does not fit); EP 4 over the replicas holds 64 experts' eighths
  Scenario s;
  s.model = catalog_model("deepseek-v3");
  s.cluster = catalog_cluster("dgx-h800");
  s.plan.tp = 8, s.plan.dp = 4, s.plan.ep = 4;
  InferenceWorkload w;
  w.batch = 8, w.prompt_len = 1024, w.output_len = 8, w.weight_dtype = Dtype::fp8;
  s.inference = w;
  const InferencePrediction ep = predict_inference(validated_scenario(s));
  EXPECT_GT(ep.first_decode.ep_comm_s, 0);
  EXPECT_GT(ep.tpot_s, ep.first_decode.ep_comm_s);
  s.plan.ep = 1;
  const InferencePrediction tp = predict_inference(validated_scenario(s));
  EXPECT_EQ(tp.first_decode.ep_comm_s, 0);
  EXPECT_LT(ep.decode_weight_bytes_per_step, tp.decode_weight_bytes_per_step);
  // per MoE layer, the experts one GPU reads in a decode step of 8 sequences, each expert
  // an eighth (TP 8) of 3 x 7168 x 2048 fp8 bytes: TP alone, the 256 (1 - (248/256)^8) = 57.4
  // experts its 8 tokens touch -> 57; EP 4, its share of the 256 (1 - (248/256)^32) = 163.3
  // the 4 replicas' 32 tokens touch -> 41
  const auto expert_bytes = [&](int ep_degree) {
    Plan p = s.plan;
    p.ep = ep_degree;
    for (const LayerOp& op : build_iteration_layer_ops(s.model, 60, p, w, decode_shape(8, 1025)))
      if (op.name == std::string_view(op_names::kMoeExpertsGateUp)) return op.weight_bytes;
    return std::int64_t{0};
  };
  const std::int64_t one_expert_gate_up = 7168LL * 2 * 2048 / 8;  // fp8: 1 byte per weight
  EXPECT_EQ(expert_bytes(1), 57 * one_expert_gate_up);
  EXPECT_EQ(expert_bytes(4), 41 * one_expert_gate_up);
}

}  // namespace
}  // namespace twinsim

namespace twinsim {
namespace {

// A pass of the expert-parallel group (ServingCostModel::ep_lockstep_pass_s): Qwen3-235B-A22B
// in fp8 on 8 H200s, attention DP 8 x EP 8. Ranks alike cost what one rank's pass costs
// (the same ops, priced in two lists: within 3%); one rank prefilling 8,192 tokens while the
// others decode 64 sequences makes every rank wait for it, but its experts' share is spread
// over the 8 GPUs: above the decoding ranks' pass, below all 8 prefilling.
TEST(ExpertParallelServing, LockstepPassWaitsForTheSlowestRank) {
  Scenario s;
  s.model = catalog_model("qwen3-235b-a22b");
  s.cluster = catalog_cluster("dgx-h200");
  s.plan.dp = 8, s.plan.ep = 8;
  InferenceWorkload w;
  w.batch = 64, w.prompt_len = 1000, w.output_len = 100, w.weight_dtype = Dtype::fp8, w.kv_dtype = Dtype::fp8;
  s.inference = w;
  const ServingCostModel model(validated_scenario(s));
  const IterationShape decode = decode_shape(64, 1500), prefill = prefill_shape(1, 8192);
  const double alone = model.cost(decode).latency_s();
  EXPECT_NEAR(model.ep_lockstep_pass_s(std::vector<IterationShape>(8, decode)) / alone, 1.0, 0.03);
  std::vector<IterationShape> mixed(8, decode);
  mixed[3] = prefill;
  const double group = model.ep_lockstep_pass_s(mixed);
  EXPECT_GT(group, 2 * alone);
  EXPECT_LT(group, 0.8 * model.cost(prefill).latency_s());
  EXPECT_EQ(model.ep_lockstep_pass_s(std::vector<IterationShape>(8)), 0.0);  // nobody runs
}

}  // namespace
}  // namespace twinsim
