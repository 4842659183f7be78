// Megatron-core's MoE layer priced call by call (models/moe_host_calls.hpp, the stack's
// moe_host_calls: megatron_core): the census's totals, summed by hand from the table in
// models/README.md; the forward split at the dispatcher's device-to-host sync; a host-bound
// layer taking exactly its calls' time.
#include <gtest/gtest.h>

#include <string>

#include "models/moe_host_calls.hpp"
#include "models/op_names.hpp"
#include "scenario/load.hpp"
#include "sim/training/layer_costs.hpp"

namespace twinsim {
namespace {

// The rows of Megatron-core's MoE layer under EP > 1 with several local experts, in order.
constexpr std::string_view kMoeRows[] = {
    op_names::kMoeRouter,        op_names::kMoePermute,    op_names::kMoeDispatch,    op_names::kMoeSortChunks,
    op_names::kMoeExpertsGateUp, op_names::kMoeExpertsAct, op_names::kMoeExpertsDown, op_names::kMoeUnsortChunks,
    op_names::kMoeCombine,       op_names::kMoeUnpermute};

HostCalls sum_calls(std::int64_t local_experts, bool quantized, bool backward) {
  HostCalls total;
  for (std::string_view row : kMoeRows) {
    const auto calls = megatron_core_moe_host_calls(row, local_experts, quantized);
    EXPECT_TRUE(calls) << row;
    const HostCalls& pass = backward ? calls->bwd : calls->fwd;
    total.torch_ops += pass.torch_ops;
    total.gemm_launches += pass.gemm_launches;
    total.collectives += pass.collectives;
  }
  return total;
}

TEST(MoeHostCalls, TheCensusOfAQwen3LayerIsTheReadmesTable) {
  // 16 local experts (Qwen3-30B-A3B, 128 experts on EP 8), fp8: forward 40 ops, 1 + 16 + 16
  // GEMMs, the counts' all-gather and three all-to-alls; backward 22 ops, 2 + 32 + 32 GEMMs
  const HostCalls fwd = sum_calls(16, true, false);
  EXPECT_EQ(fwd.torch_ops, 40);
  EXPECT_EQ(fwd.gemm_launches, 33);
  EXPECT_EQ(fwd.collectives, 4);
  const HostCalls bwd = sum_calls(16, true, true);
  EXPECT_EQ(bwd.torch_ops, 22);
  EXPECT_EQ(bwd.gemm_launches, 66);
  EXPECT_EQ(bwd.collectives, 3);
  // bf16: no fp8 padding (2 ops a way at gate_up, 1 at down); 4 experts: 9 and 18 GEMMs
  const HostCalls plain = sum_calls(4, false, false);
  EXPECT_EQ(plain.torch_ops, 37);
  EXPECT_EQ(plain.gemm_launches, 9);
}

TEST(MoeHostCalls, GptOssClampAndExpertBiasByHand) {
  // gpt-oss-120B on EP 8: 16 local experts. The clamp (weighted_bias_quick_geglu_impl): two
  // clamps and a cat forward; backward the one-sided clamp's mask and where (2), the two-sided
  // one's ge, le, logical_and_ and where (4), the chunk's cat (1) = 7. The expert bias
  // (_apply_bias): 16 x (b * p, t + ...) + the cat = 33 forward; backward 16 x (grad * p and
  // its row sum for b, grad * b and its column sum for p) + 2 splits' cats = 66.
  const auto clamp = megatron_core_moe_host_calls(op_names::kMoeExpertsActClamp, 16, false);
  ASSERT_TRUE(clamp);
  EXPECT_EQ(clamp->fwd.torch_ops, 3);
  EXPECT_EQ(clamp->bwd.torch_ops, 7);
  const auto bias = megatron_core_moe_host_calls(op_names::kMoeExpertsBias, 16, false);
  ASSERT_TRUE(bias);
  EXPECT_EQ(bias->fwd.torch_ops, 33);
  EXPECT_EQ(bias->bwd.torch_ops, 66);
  EXPECT_EQ(bias->fwd.gemm_launches + bias->bwd.gemm_launches + bias->fwd.collectives, 0);
  EXPECT_FALSE(bias->host_waits_before_fwd);
  EXPECT_EQ(megatron_core_moe_host_calls(op_names::kMoeExpertsBias, 4, false)->fwd.torch_ops, 9);  // 4 x 2 + 1
}

TEST(MoeHostCalls, OnlyTheDispatchWaitsAndOnlyMoeRowsAreCounted) {
  for (std::string_view row : kMoeRows)
    EXPECT_EQ(megatron_core_moe_host_calls(row, 16, true)->host_waits_before_fwd, row == op_names::kMoeDispatch) << row;
  EXPECT_FALSE(megatron_core_moe_host_calls(op_names::kAttnQkv, 16, true));
  EXPECT_FALSE(megatron_core_moe_host_calls(op_names::kMoeSharedGateUp, 16, true));
}

OpTime op(TimeCategory category, double device_s, double host_s, bool waits) {
  OpTime t;
  t.category = category;
  t.fwd_s = t.dgrad_s = device_s;
  t.fwd_host_s = t.bwd_host_s = host_s;
  t.host_waits_before_fwd = waits;
  return t;
}

TEST(MoeHostCalls, TheForwardSerialisesAtTheSync) {
  // Before the sync a device-bound op (200 us, host 10 us); after it a collective of 50 us and
  // a host-bound op (10 us of device, 100 us of host). Layer after layer: the host issues the
  // later run (100 us; the device, 60 us, waits for it), then the next layer's first run,
  // which the device starts at 100 us and ends at 300: 300 - 50 = 250 us of compute. One run
  // (the backward, no sync): the device's 210 + 50 outlasts the host's 110, compute 210.
  LayerCost layer;
  layer.ops = {op(TimeCategory::compute, 200e-6, 10e-6, false), op(TimeCategory::ep_comm, 50e-6, 0, true),
               op(TimeCategory::compute, 10e-6, 100e-6, false)};
  EXPECT_NEAR(layer.fwd_s(TimeCategory::compute), 250e-6, 1e-12);
  EXPECT_NEAR(layer.fwd_s(TimeCategory::ep_comm), 50e-6, 1e-12);
  EXPECT_NEAR(layer.bwd_s(TimeCategory::compute), 210e-6, 1e-12);
  // the host's first run hides behind the device's later one: 10 us of device and 100 of
  // host before the sync, 250 of device (200 compute) and 10 of host after it: 260 - 50
  layer.ops = {op(TimeCategory::compute, 10e-6, 100e-6, false), op(TimeCategory::ep_comm, 50e-6, 0, true),
               op(TimeCategory::compute, 200e-6, 10e-6, false)};
  EXPECT_NEAR(layer.fwd_s(TimeCategory::compute), 210e-6, 1e-12);
}

Scenario small_moe(const std::string& stack) {
  return load_scenario_text(R"(
model: {layers: 2, hidden: 512, heads: 8, vocab: 32000, max_seq_len: 512, moe: {experts: 8, top_k: 2, expert_ffn_hidden: 512}}
cluster: dgx-h100
training: {seq_len: 512, global_batch: 8, micro_batch: 1, precision: bf16}
plan: {tp: 1, pp: 1, dp: 2, ep: 2}
stack: )" + stack + "\n");
}

// A host-bound layer's forward and backward (compute and EP comm), and how many of its rows
// lie outside the MoE layer's census (each costs one host_op_us).
struct HostBoundLayer {
  double other_rows = 0, fwd_s = 0, bwd_s = 0;
};
HostBoundLayer host_bound_layer(const Scenario& s) {
  const LayerCost layer = cost_layer(s, 0);
  HostBoundLayer h;
  for (const OpTime& t : layer.ops)
    if (t.category == TimeCategory::compute && !megatron_core_moe_host_calls(t.name, 4, false)) h.other_rows += 1;
  h.fwd_s = layer.fwd_s(TimeCategory::compute) + layer.fwd_s(TimeCategory::ep_comm);
  h.bwd_s = layer.bwd_s(TimeCategory::compute) + layer.bwd_s(TimeCategory::ep_comm);
  return h;
}

TEST(MoeHostCalls, AHostBoundMoeLayerTakesItsCallsTime) {
  // 1 ms a call and a row dwarfs the small layer's kernels. Forward: the rows outside the
  // MoE layer at 1 ms each, and the layer's 37 ops, 9 GEMMs (router, 4 experts x 2) and 4
  // NCCL calls (4 local experts, bf16: sum_calls above) = 50 ms, plus the experts' output
  // bias (the model's `bias` defaults on: 4 x 2 + 1 = 9 ops) = 59 ms, in two runs, both
  // host-bound.
  const Scenario s = small_moe(
      "{preset: megatron-core, host_op_us: 1000, host_torch_op_us: 1000, host_gemm_launch_us: 1000, "
      "host_collective_us: 1000}");
  const HostBoundLayer h = host_bound_layer(s);
  ASSERT_GE(h.other_rows, 5);
  EXPECT_NEAR(h.fwd_s, (h.other_rows + 59) * 1e-3, 1e-9);
  // backward, one run: 19 ops (the table's 22 less fp8's 3 paddings), 2 + 8 + 8 GEMMs and
  // 3 NCCL calls = 40 ms, plus the bias's 4 x 4 + 2 = 18 ops = 58 ms
  EXPECT_NEAR(h.bwd_s, (h.other_rows + 58) * 1e-3, 1e-9);
}

TEST(MoeHostCalls, AGraphedRouterAndPreprocessCostOnlyTheirReplay) {
  // As above, with the router and the preprocess captured (cuda_graph_scope [moe_router,
  // moe_preprocess]): the pre-MLP norm's 1 ms becomes the replay's 2 calls (the input's
  // copy, the replay); the router's 9 ops and 1 GEMM and the preprocess's 18 ops and 1 NCCL
  // call go: 59 - 10 - 19 + 2 - 1 = 31 ms more than the other rows, forward. Backward: the
  // replay's 3 calls (two output gradients' copies, the replay) for the norm's 1 ms, less
  // the router's 7 ops and 2 GEMMs and the permute's 2 ops: 58 - 9 - 2 + 3 - 1 = 49.
  const Scenario s = small_moe(
      "{preset: megatron-core, host_op_us: 1000, host_torch_op_us: 1000, host_gemm_launch_us: 1000, "
      "host_collective_us: 1000, cuda_graph_scope: [moe_router, moe_preprocess]}");
  const HostBoundLayer h = host_bound_layer(s);
  EXPECT_NEAR(h.fwd_s, (h.other_rows + 31) * 1e-3, 1e-9);
  EXPECT_NEAR(h.bwd_s, (h.other_rows + 49) * 1e-3, 1e-9);
}

TEST(MoeHostCalls, TheGraphScopesAreMegatronCoresAndOneGraphALayer) {
  const CudaGraphScopes moe{false, true, true};
  EXPECT_TRUE(captured_in_graph(moe, op_names::kMlpNorm));
  EXPECT_TRUE(captured_in_graph(moe, op_names::kMoePermute));
  EXPECT_FALSE(captured_in_graph(moe, op_names::kMoeDispatch));  // the sync and the all-to-all stay eager
  EXPECT_FALSE(captured_in_graph(moe, op_names::kAttnCore));
  const CudaGraphScopes all{true, true, true};
  EXPECT_TRUE(captured_in_graph(all, op_names::kAttnCore));
  EXPECT_TRUE(graph_replay_host_calls(all, op_names::kAttnNorm));  // one graph, from the layer's first row
  EXPECT_FALSE(graph_replay_host_calls(all, op_names::kMlpNorm));
  EXPECT_FALSE(graph_replay_host_calls(CudaGraphScopes{}, op_names::kAttnNorm));
  EXPECT_THROW(small_moe("{preset: megatron-core, cuda_graph_scope: [moe_preprocess]}"), ScenarioError);
  EXPECT_THROW(small_moe("{preset: megatron-core, cuda_graph_scope: [mlp_router]}"), ScenarioError);
  // no per-call cost (megatron-eager carries one for its softmax fallback: taken off with it)
  EXPECT_THROW(small_moe("{preset: megatron-eager, softmax: kernel, host_torch_op_us: 0, cuda_graph_scope: [attn]}"),
               ScenarioError);
}

TEST(MoeHostCalls, TheCensusNeedsItsPerCallCosts) {
  EXPECT_THROW(small_moe("{preset: megatron-core, host_torch_op_us: 0}"), ScenarioError);
  EXPECT_NO_THROW(small_moe("{preset: megatron-core}"));
}

}  // namespace
}  // namespace twinsim
