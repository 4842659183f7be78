// Serving with the experts under EP inside attention's TP group (plan.expert_tp < plan.tp,
// ep x expert_tp = tp): TensorRT-LLM's moe_expert_parallel_size with tp_size, vLLM's
// --enable-expert-parallel at DP 1, SGLang's --ep-size. The MoE layer's ops, its communication
// and the experts' weights one GPU holds, by hand.
#include <gtest/gtest.h>

#include <string_view>

#include "models/op_names.hpp"
#include "scenario/build.hpp"
#include "scenario/load.hpp"
#include "sim/inference/iteration_cost.hpp"
#include "sim/inference/iteration_ops.hpp"
#include "sim/memory/weights.hpp"
#include "tests/unit/memory/test_models.hpp"

namespace twinsim {
namespace {

using test::tiny_moe;

const LayerOp* find(const std::vector<LayerOp>& ops, std::string_view name) {
  for (const LayerOp& op : ops)
    if (op.name == name) return &op;
  return nullptr;
}

Plan experts_in_tp(int tp, int ep, int expert_tp) {
  Plan p;
  p.tp = tp, p.ep = ep, p.expert_tp = expert_tp;
  return p;
}

// tiny_moe (h 64, 8 experts of width 32, top 2), TP 2 with EP 2 inside it, a decode step of
// 4 sequences. Every rank holds the 4 tokens; their 4 x 2 = 8 routed rows split over the two
// ranks' experts, 4 each. The 4 tokens touch 8 (1 - (6/8)^4) = 5.47 experts, 2.73 of this
// rank's 4 -> 3, ceil(4 / 3) = 2 rows each, whole experts (expert_tp 1): gate_up N = 2 x 32.
TEST(ExpertsInTpServing, RunsTheLocalExpertsOnTheirShareOfTheReplicasTokens) {
  InferenceWorkload w;
  const std::vector<LayerOp> ops =
      build_iteration_layer_ops(tiny_moe(), 1, experts_in_tp(2, 2, 1), w, decode_shape(4, 100));
  const LayerOp* gate_up = find(ops, op_names::kMoeExpertsGateUp);
  ASSERT_NE(gate_up, nullptr);
  EXPECT_EQ(gate_up->count, 3);
  EXPECT_EQ(gate_up->m, 2);
  EXPECT_EQ(gate_up->n, 2 * 32);
  EXPECT_EQ(gate_up->k, 64);
  EXPECT_EQ(gate_up->weight_bytes, 3 * 64 * (2 * 32) * 2);  // 3 whole experts' [64 x 64] in bf16
  // the copies around the experts: this rank's 4 routed rows and the 4 tokens' rows, 64 x 2 B
  EXPECT_EQ(find(ops, op_names::kMoePermute)->fwd_bytes, (4 + 4) * 64 * 2);
  // the same TP 2 with the experts TP-sharded (expert_tp = tp): all 8 rows, 5 experts' halves
  const std::vector<LayerOp> tp_ops =
      build_iteration_layer_ops(tiny_moe(), 1, experts_in_tp(2, 1, 0), w, decode_shape(4, 100));
  EXPECT_EQ(find(tp_ops, op_names::kMoeExpertsGateUp)->count, 5);
  EXPECT_EQ(find(tp_ops, op_names::kMoeExpertsGateUp)->n, 2 * 16);
  EXPECT_EQ(find(tp_ops, op_names::kMoePermute)->fwd_bytes, (8 + 4) * 64 * 2);
}

// No all-to-all: the partial outputs meet in the MLP's TP all-reduce of the 4 tokens' rows
// (4 x 64 x 2 B = 512 B), as attention's do.
TEST(ExpertsInTpServing, CombinesInTheTensorParallelAllReduce) {
  InferenceWorkload w;
  const std::vector<LayerOp> ops =
      build_iteration_layer_ops(tiny_moe(), 1, experts_in_tp(2, 2, 1), w, decode_shape(4, 100));
  for (std::string_view name : {op_names::kMoeCounts, op_names::kMoeDispatch, op_names::kMoeCombine})
    EXPECT_EQ(find(ops, name), nullptr) << name;
  for (std::string_view name : {op_names::kAttnTpExit, op_names::kMlpTpExit}) {
    const LayerOp* exit = find(ops, name);
    ASSERT_NE(exit, nullptr) << name;
    EXPECT_EQ(exit->fwd_comm.kind, CollectiveKind::all_reduce);
    EXPECT_EQ(exit->fwd_comm.group, CommGroup::tp);
    EXPECT_EQ(exit->fwd_comm.bytes, 4 * 64 * 2);
  }
}

// A pass prices no EP communication; its TP collectives are the two all-reduces a layer
// (tiny_moe's 2 layers) and the embedding's, on a 2-GPU all-reduce curve measured at 512 B:
// 512 x 2 (2-1)/2 / 256 MB/s = 2 us each (bus bandwidth), 5 x 2 = 10 us; the head's logits
// all-gather on its own curve, 4 x 128 x 2 B = 1 KiB x 1/2 / 512 MB/s = 1 us.
TEST(ExpertsInTpServing, PaysOnlyTheTensorParallelAllReduces) {
  Scenario s;
  s.model = tiny_moe();
  s.cluster = catalog_cluster("dgx-h100");
  s.cluster.intra_node.measured_busbw["all_reduce"][2] = {{512, 256e6}};
  s.cluster.intra_node.measured_busbw["all_gather"][2] = {{1024, 512e6}};
  s.plan = experts_in_tp(2, 2, 1);
  InferenceWorkload w;
  w.batch = 4, w.prompt_len = 99, w.output_len = 4;
  s.inference = w;
  const IterationCost cost = ServingCostModel(validated_scenario(s)).cost(decode_shape(4, 100));
  EXPECT_EQ(cost.ep_comm_s, 0.0);
  EXPECT_NEAR(cost.tp_comm_s, 11e-6, 1e-12);
}

// Memory: each GPU holds experts / ep experts of expert_ffn / expert_tp columns. tiny_moe's
// layer: 8 experts x 3 x 64 x 32 = 49,152 parameters of experts. TP 4 as EP 2 x ETP 2: 4
// experts x 3 x 64 x 16 = 12,288; TP 4 as EP 4: 2 x 3 x 64 x 32 = 12,288 (what TP 4 alone
// holds, 8 x 3 x 64 x 8); the 2 layers double it.
TEST(ExpertsInTpServing, HoldsTheExpertsDividedByEpAndExpertTp) {
  EXPECT_EQ(stage_params(tiny_moe(), experts_in_tp(4, 2, 2), 0).expert, 2 * 12288);
  EXPECT_EQ(stage_params(tiny_moe(), experts_in_tp(4, 4, 1), 0).expert, 2 * 12288);
  EXPECT_EQ(stage_params(tiny_moe(), experts_in_tp(4, 1, 0), 0).expert, 2 * 12288);
  EXPECT_EQ(stage_params(tiny_moe(), experts_in_tp(2, 2, 1), 0).expert, 2 * 4 * 3 * 64 * 32);
}

}  // namespace
}  // namespace twinsim
