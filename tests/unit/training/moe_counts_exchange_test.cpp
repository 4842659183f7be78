// The per-expert row counts an expert-parallel MoE layer exchanges before its dispatch (the
// executor's moe_block.cpp exchange_counts; Megatron-core's alltoall dispatcher): one small,
// latency-bound all-to-all per MoE layer forward, none in the backward, priced by the same
// collective cost as the dispatch. Times derived by hand from a measured all-to-all curve:
// nccl-tests' time = bytes x (n - 1) / n / busbw.
#include <gtest/gtest.h>

#include <algorithm>

#include "models/layer_ops.hpp"
#include "models/op_names.hpp"
#include "scenario/load.hpp"
#include "sim/memory/activations.hpp"
#include "sim/training/layer_costs.hpp"

namespace twinsim {
namespace {

// Qwen3-30B-A3B's MoE shape (128 experts, top-8) on one DGX H100 node, EP 8 or none
Scenario qwen3_30b(int ep) {
  Scenario s = load_scenario_text(R"(
model: {hf_config: qwen3-235b-a22b, layers: 48, hidden: 2048, heads: 32, kv_heads: 4, head_dim: 128,
        ffn_hidden: 6144, moe: {expert_ffn_hidden: 768}}
cluster: dgx-h100
stack: {preset: none}
training: {seq_len: 4096, global_batch: 1024, micro_batch: 1, precision: bf16, optimizer: adam}
plan: {tp: 1, pp: 1, dp: 128, ep: )" +
                                  std::to_string(ep) + R"(, expert_tp: 1, zero: 1, recompute: none}
)");
  // an 8-GPU all-to-all measured at 512 B (448 MB/s busbw: 512 x 7/8 / 448e6 = 1 us) and 1 GiB
  s.cluster.intra_node.measured_busbw["all_to_all"][8] = {{512, 448e6}, {1073741824, 200e9}};
  return s;
}

std::vector<LayerOp> ops_of(const Scenario& s) {
  return build_layer_ops(s.model, 0, s.plan, training_shape(*s.training, s.stack));
}

std::ptrdiff_t index_of(const std::vector<LayerOp>& ops, std::string_view name) {
  const auto it = std::find_if(ops.begin(), ops.end(), [&](const LayerOp& op) { return op.name == name; });
  return it == ops.end() ? -1 : it - ops.begin();
}

TEST(MoeCountsExchange, OneCountPerExpertBeforeTheDispatchForwardOnly) {
  const std::vector<LayerOp> ops = ops_of(qwen3_30b(8));
  const std::ptrdiff_t counts = index_of(ops, op_names::kMoeCounts);
  ASSERT_GE(counts, 0);
  const LayerOp& op = ops[static_cast<std::size_t>(counts)];
  EXPECT_EQ(op.kind, OpKind::collective);
  EXPECT_EQ(op.fwd_comm.kind, CollectiveKind::all_to_all);
  EXPECT_EQ(op.fwd_comm.group, CommGroup::ep);
  EXPECT_EQ(op.fwd_comm.bytes, 128 * 4);                     // 128 experts' 4-byte counts, what one rank sends
  EXPECT_EQ(op.bwd_comm.kind, CollectiveKind::none);         // the backward reuses the forward's counts
  EXPECT_LT(counts, index_of(ops, op_names::kMoeDispatch));  // known before any row moves
  EXPECT_TRUE(op.saved.empty());
  // without expert parallelism every expert is local: nothing to exchange
  EXPECT_EQ(index_of(ops_of(qwen3_30b(1)), op_names::kMoeCounts), -1);
}

TEST(MoeCountsExchange, PricedAsAnAllToAllOfItsBytes) {
  const LayerCost cost = cost_layer(qwen3_30b(8), 0);
  const auto it =
      std::find_if(cost.ops.begin(), cost.ops.end(), [](const OpTime& op) { return op.name == op_names::kMoeCounts; });
  ASSERT_NE(it, cost.ops.end());
  EXPECT_NEAR(it->fwd_s, 1e-6, 1e-12);  // 512 B x 7/8 / 448 MB/s
  EXPECT_EQ(it->dgrad_s, 0.0);
  EXPECT_EQ(it->category, TimeCategory::ep_comm);
}

}  // namespace
}  // namespace twinsim
