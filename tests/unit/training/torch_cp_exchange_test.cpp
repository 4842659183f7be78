// Context parallelism's exchange as PyTorch's ring attention runs it (stack.cp_exchange:
// torch_all_gather, sim/training/torch_cp_exchange.hpp): SDPA's repeated K,V all-gathered once
// a pass, hidden behind the local step only; fp32 dK,dV passed to the next rank after each
// backward step, the last waited for (eager); compiled, every collective waited for whole.
// Byte counts by hand below.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "models/op_names.hpp"
#include "scenario/load.hpp"
#include "sim/cost/collective_cost.hpp"
#include "sim/training/layer_costs.hpp"
#include "sim/training/rank_layout.hpp"
#include "sim/training/torch_cp_exchange.hpp"
#include "sim/training/training_report.hpp"

namespace twinsim {
namespace {

// Llama-3-8B (32 query heads, 8 KV heads of 128) on DGX H100s, one sequence of
// 32,768 tokens a rank, bf16; `exchange` the stack's cp_exchange (layer_kernels fused: under
// torch_all_gather the ring compiled, the only way a CP plan runs PyTorch's ring here, the hf_*
// censuses being one GPU's layers).
Scenario llama8b(int cp, int tp, int nodes, const std::string& exchange) {
  const int dp = 8 * nodes / (cp * tp);
  const std::string text =
      "model: llama3-8b\n"
      "cluster: {preset: dgx-h100, nodes: " +
      std::to_string(nodes) +
      "}\n"
      "stack: {cp_exchange: " +
      exchange +
      "}\n"
      "training: {seq_len: " +
      std::to_string(32768 * cp) + ", global_batch: " + std::to_string(dp) +
      ", micro_batch: 1, precision: bf16}\n"
      "plan: {tp: " +
      std::to_string(tp) + ", pp: 1, cp: " + std::to_string(cp) + ", dp: " + std::to_string(dp) +
      ", recompute: full}\n";
  return load_scenario_text(text);
}

const OpTime& row(const LayerCost& cost, const char* name) {
  const auto it = std::find_if(cost.ops.begin(), cost.ops.end(), [&](const OpTime& op) { return op.name == name; });
  if (it == cost.ops.end()) throw std::runtime_error(std::string("no row ") + name);
  return *it;
}

double collective_s(const Scenario& s, CollectiveOp op, double bytes) {
  return collective_time_s(s.cluster, op, group_layout(s.cluster, s.plan, ParallelGroup::cp), bytes);
}

// cp 4 in one node: a rank's K,V as SDPA sees them are 32,768 tokens x 2 x 32 heads x 128 x
// 2 bytes = 536,870,912 (repeat_kv: 4x the 8 KV heads' 134,217,728); the forward gathers four of
// them (2 GiB). The backward gathers them again and passes fp32 dK,dV, 1,073,741,824 bytes, to
// the next rank 4 times. Compiled, a traced functional collective is waited for as soon as it is
// issued (_maybe_wrap_tensor's wait_tensor; Inductor of 2024-12 kept the two together): the step
// waits for the whole exchange, forward and backward.
TEST(TorchCpExchange, RepeatedKvGatheredOnceAndTheCompiledRingWaitsForAllOfIt) {
  const Scenario s = llama8b(4, 1, 1, "torch_all_gather");
  ASSERT_TRUE(torch_ring_compiled(s.stack));
  const LayerCost cost = cost_layer(s, 0);
  const double gather_s = collective_s(s, CollectiveOp::all_gather, 4 * 536870912.0);
  const double pass_s = collective_s(s, CollectiveOp::send_recv, 1073741824.0);
  const OpTime& ring = row(cost, op_names::kAttnCpRing);
  EXPECT_NEAR(ring.fwd_s, gather_s, 1e-12);
  EXPECT_NEAR(ring.dgrad_s, gather_s + 4 * pass_s, 1e-12);
  EXPECT_NEAR(cost.cp_waited_fwd_s, gather_s, 1e-12);
  EXPECT_NEAR(cost.cp_waited_bwd_s, gather_s + 4 * pass_s, 1e-12);
  // the step's exposed CP time holds the 32 layers' waits, the forward's twice (full recompute)
  EXPECT_GE(predict_training(s).breakdown.cp_comm_s, 32 * (3 * gather_s + 4 * pass_s) * 0.99);
  // the ideal ring passes the grouped chunks, 3 x 134,217,728 bytes, all of it beside the attention
  const LayerCost ideal = cost_layer(llama8b(4, 1, 1, "ring"), 0);
  EXPECT_NEAR(row(ideal, op_names::kAttnCpRing).fwd_s, collective_s(s, CollectiveOp::send_recv, 3 * 134217728.0),
              1e-12);
  EXPECT_EQ(ideal.cp_waited_fwd_s + ideal.cp_waited_bwd_s, 0);
}

// Eager, the waits fall where _templated_ring_attention and its backward make them, by hand at
// cp 4 with a gather of 6 ms, dK,dV passes of 3 ms and steps of 10 ms forward, 20 ms backward:
// the gather hides behind the local step (0 waited), the first 3 passes behind the next step, the
// last waited after the loop: 3 ms. A gather of 15 ms: 5 ms over the forward step, none over the
// backward's. A pass of 25 ms: 5 ms over each of the 3 next steps, plus the last, 15 + 25 = 40 ms.
// Compiled, the whole exchange: 6 ms forward, 6 + 4 x 3 = 18 ms backward.
TEST(TorchCpExchange, EagerRingHidesWhatItsNextStepCovers) {
  const TorchCpExchange hidden = torch_cp_waits(6e-3, 3e-3, 10e-3, 20e-3, 4, false);
  EXPECT_DOUBLE_EQ(hidden.fwd_s, 6e-3);
  EXPECT_DOUBLE_EQ(hidden.bwd_s, 18e-3);
  EXPECT_DOUBLE_EQ(hidden.fwd_waited_s, 0);
  EXPECT_DOUBLE_EQ(hidden.bwd_waited_s, 3e-3);
  const TorchCpExchange long_gather = torch_cp_waits(15e-3, 3e-3, 10e-3, 20e-3, 4, false);
  EXPECT_NEAR(long_gather.fwd_waited_s, 5e-3, 1e-15);
  EXPECT_NEAR(long_gather.bwd_waited_s, 3e-3, 1e-15);
  EXPECT_NEAR(torch_cp_waits(6e-3, 25e-3, 10e-3, 20e-3, 4, false).bwd_waited_s, 40e-3, 1e-15);
  const TorchCpExchange compiled = torch_cp_waits(6e-3, 3e-3, 10e-3, 20e-3, 4, true);
  EXPECT_DOUBLE_EQ(compiled.fwd_waited_s, 6e-3);
  EXPECT_DOUBLE_EQ(compiled.bwd_waited_s, 18e-3);
}

// tp 8 x cp 8 over eight nodes: each CP group has one GPU a node, its exchange on the network.
// A rank holds 32 / 8 = 4 query heads and one KV head, repeated 4 times: 32,768 x 2 x 4 x 128 x
// 2 = 67,108,864 bytes a rank, eight gathered; fp32 dK,dV twice that, passed 8 times. Compiled,
// the step waits for all of it, forward and backward, where the ideal ring hid its exchange.
TEST(TorchCpExchange, AcrossNodesTheCompiledRingWaitsForTheNetwork) {
  const Scenario s = llama8b(8, 8, 8, "torch_all_gather");
  const LayerCost cost = cost_layer(s, 0);
  const double gather_s = collective_s(s, CollectiveOp::all_gather, 8 * 67108864.0);
  const double pass_s = collective_s(s, CollectiveOp::send_recv, 2 * 67108864.0);
  const OpTime& attention = row(cost, op_names::kAttnCore);
  std::printf("gather %.2f ms, dK,dV pass %.2f ms; attention step %.2f ms forward, %.2f backward\n", 1e3 * gather_s,
              1e3 * pass_s, 1e3 * attention.fwd_s / 8, 1e3 * attention.dgrad_s / 8);
  EXPECT_NEAR(row(cost, op_names::kAttnCpRing).fwd_s, gather_s, 1e-12);
  EXPECT_NEAR(cost.cp_waited_fwd_s, gather_s, 1e-12);
  EXPECT_NEAR(cost.cp_waited_bwd_s, gather_s + 8 * pass_s, 1e-12);
  // the step waits for it on the compute stream (exposed cp_comm), where the ideal ring hid it
  const TrainingPrediction torch = predict_training(s), ideal = predict_training(llama8b(8, 8, 8, "ring"));
  EXPECT_GT(torch.breakdown.cp_comm_s, 32 * (2 * cost.cp_waited_fwd_s + cost.cp_waited_bwd_s) * 0.99);
  EXPECT_GT(torch.step_s, ideal.step_s);
  // the ideal ring's exchange (grouped K,V a step at a time) hides beside the layer's passes
  const double ring_bwd_s = row(cost_layer(llama8b(8, 8, 8, "ring"), 0), op_names::kAttnCpRing).dgrad_s;
  ASSERT_GT(ring_bwd_s, 0);
  EXPECT_LT(ideal.breakdown.cp_comm_s, 0.01 * 32 * ring_bwd_s);
}

// The ring loops' memory passes, counted by hand from _templated_ring_attention and its
// backward (2024-12) for one layer of Llama-3-8B at 32,768 tokens a rank: N = 32,768 x 32
// heads x 128 = 134,217,728 elements of Q (and of K, V after repeat_kv, and of the output).
// cp 4, compiled (Inductor fuses each merge and accumulation): forward, the first step's K,V
// cat (2 x (2 + 2) = 8 bytes an element) and 3 merges (fp32 out read, bf16 block read, fp32
// written: 10): 38 N; backward, the K,V cat 8, the first blocks cast into dQ, dK, dV
// (3 x 6 = 18), 3 steps of three accumulations (3 x 3 x 10 = 90), the received dK,dV cast back
// (2 x 6 = 12): 128 N. Eager: forward, K,V contiguous and 3 cats (4 x 8 = 32), the first
// upcast and the final downcast (12), 3 merges of upcast 6, out - out_b 12, x sigmoid 8,
// out - that 12 (3 x 38 = 114): 158 N; backward, zeros 12, K,V contiguous and cats 32, the
// first += 30, 3 steps of dK,dV's half += and cat (2 x (5 + 8) = 26) and dQ's += 10
// (3 x 36 = 108), the fp32 dK,dV cat 4 x 16 = 64, three casts 18: 264 N.
TEST(TorchCpExchange, RingPassesCountedFromTheLoops) {
  const double n = 134217728.0;
  const TorchCpPassBytes compiled = torch_cp_pass_bytes(n, 4, true);
  EXPECT_DOUBLE_EQ(compiled.fwd, 38 * n);
  EXPECT_DOUBLE_EQ(compiled.bwd, 128 * n);
  const TorchCpPassBytes eager = torch_cp_pass_bytes(n, 4, false);
  EXPECT_DOUBLE_EQ(eager.fwd, 158 * n);
  EXPECT_DOUBLE_EQ(eager.bwd, 264 * n);
  EXPECT_EQ(torch_cp_pass_bytes(n, 1, true).fwd, 0);  // no ring without CP
  // the scenario's layer: its row holds those bytes, recomputed with the attention under full
  // recompute; the ideal ring (stack.cp_exchange: ring) has no such row
  const LayerCost cost = cost_layer(llama8b(4, 1, 1, "torch_all_gather"), 0);
  const OpTime& passes = row(cost, op_names::kAttnCpMerge);
  EXPECT_DOUBLE_EQ(passes.fwd_bytes, 38 * n);
  EXPECT_DOUBLE_EQ(passes.dgrad_bytes, 128 * n);
  EXPECT_TRUE(passes.recomputed);
  EXPECT_GT(passes.fwd_s, 0);
  const LayerCost ideal = cost_layer(llama8b(4, 1, 1, "ring"), 0);
  EXPECT_THROW(row(ideal, op_names::kAttnCpMerge), std::runtime_error);
}

// The ring's calls (torch_ring_calls): at cp 4 step 0 is a causal call over the rank's own
// queries and keys, the full rectangle of which is F / 4 of the op list's F (s/4 queries against
// all s keys); steps 1-3 each compute (s/4)^2 / 2 pairs, F / 8, without the mask: 3 F / 8.
TEST(TorchCpExchange, RingCallsCountedFromTheLoop) {
  EXPECT_DOUBLE_EQ(torch_ring_calls(1).causal_share, 1);
  EXPECT_DOUBLE_EQ(torch_ring_calls(1).noncausal_share, 0);
  EXPECT_DOUBLE_EQ(torch_ring_calls(4).causal_share, 0.25);
  EXPECT_DOUBLE_EQ(torch_ring_calls(4).noncausal_share, 0.375);
  EXPECT_DOUBLE_EQ(torch_ring_calls(8).causal_share, 0.125);
  EXPECT_DOUBLE_EQ(torch_ring_calls(8).noncausal_share, 0.4375);  // 7 calls of F / 16
}

// The attention core's time with the non-causal calls at their own curve, against all of it at
// the causal curve (what the GPU's causal curves alone give), by hand with flat curves: causal
// efficiency e_c against the rectangle, non-causal e_n against the pairs it computes. At cp 4 the
// time is F / (4 P e_c) + 3 F / (8 P e_n) against F / (P e_c): a ratio of 1/4 + 3/8 e_c / e_n,
// forward (e_c 0.6, e_n 0.25) 0.25 + 0.375 x 2.4 = 1.15, backward (0.5, 0.2) 0.25 + 0.375 x 2.5 =
// 1.1875. Where e_n = e_c / 2 (the same pairs a second) the ratio is 1. Without PyTorch's ring
// (stack.cp_exchange: ring) or without CP the non-causal curves are not used.
TEST(TorchCpExchange, RingStepsAfterTheFirstRunTheNonCausalKernel) {
  const auto flat = [](double fwd, double bwd) {
    return std::map<int, PassCurves>{{128, PassCurves{{{1, fwd}}, {{1, bwd}}}}};
  };
  const auto core_s = [&](Scenario s, bool noncausal_curves) {
    s.stack.attention_kernel = std::string(kSdpaFlashAttention);
    s.cluster.gpu.attention_kernel_efficiency_by_seq[std::string(kSdpaFlashAttention)] = flat(0.6, 0.5);
    s.cluster.gpu.attention_kernel_noncausal_efficiency_by_seq.clear();
    if (noncausal_curves)
      s.cluster.gpu.attention_kernel_noncausal_efficiency_by_seq[std::string(kSdpaFlashAttention)] = flat(0.25, 0.2);
    const OpTime& core = row(cost_layer(s, 0), op_names::kAttnCore);
    return std::pair{core.fwd_s, core.dgrad_s};
  };
  const Scenario ring = llama8b(4, 1, 1, "torch_all_gather");
  const auto [fwd, bwd] = core_s(ring, true);
  const auto [causal_fwd, causal_bwd] = core_s(ring, false);
  EXPECT_NEAR(fwd / causal_fwd, 1.15, 1e-3);  // launches aside (two more calls of microseconds)
  EXPECT_NEAR(bwd / causal_bwd, 1.1875, 1e-3);
  const Scenario ideal = llama8b(4, 1, 1, "ring");
  EXPECT_DOUBLE_EQ(core_s(ideal, true).first, core_s(ideal, false).first);
  const Scenario no_cp = llama8b(1, 1, 1, "torch_all_gather");
  EXPECT_DOUBLE_EQ(core_s(no_cp, true).second, core_s(no_cp, false).second);
}

// torchtitan's 405B CP 4 run (FSDP 2 x CP 4 x TP 8 x PP 8, async TP, torchtitan-compile): its
// CP groups cross nodes, and the compiled ring waits for each collective whole: the forward's
// gather, the backward's gather and four fp32 dK,dV passes. The reported stage runs 16 layers x 8
// micro-batches, each forward twice (full recompute), so what its compute stream waits on the
// exchange is those waits plus the straggler wait each absorbs (ClusterSpec::straggler, a
// fraction of the compute since the previous blocking collective): less than twice the passes.
// Were the backward's exchange queued behind the layer's TP collectives, it would start only
// when the backward's compute ended (7.8 s exposed here before that was fixed).
TEST(TorchCpExchange, TorchtitansCompiledCpRunWaitsForItsExchange) {
  const Scenario s = load_scenario_file(std::string(TWINSIM_SOURCE_DIR) +
                                        "/scenarios/validation/training/torchtitan-llama31-405b-512gpu-cp4-128k.yaml");
  ASSERT_EQ(s.stack.cp_exchange, kTorchAllGatherCpExchange);
  ASSERT_TRUE(torch_ring_compiled(s.stack));
  const LayerCost cost = cost_layer(s, 0);
  const OpTime& ring = row(cost, op_names::kAttnCpRing);
  EXPECT_DOUBLE_EQ(cost.cp_waited_fwd_s, ring.fwd_s);
  EXPECT_DOUBLE_EQ(cost.cp_waited_bwd_s, ring.dgrad_s);
  EXPECT_LT(cost.cp_waited_fwd_s, cost.cp_waited_bwd_s);  // one gather against a gather and 4 passes
  const TrainingPrediction p = predict_training(s);
  const double waited = 16 * 8 * (2 * cost.cp_waited_fwd_s + cost.cp_waited_bwd_s);
  std::printf("exposed CP %.2f s against %.2f s of waited passes\n", p.breakdown.cp_comm_s, waited);
  EXPECT_GE(p.breakdown.cp_comm_s, waited * 0.99);
  EXPECT_LT(p.breakdown.cp_comm_s, 2 * waited);
}

}  // namespace
}  // namespace twinsim
