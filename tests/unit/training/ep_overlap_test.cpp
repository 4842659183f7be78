// Megatron-core's EP all-to-all overlap (plan.moe_a2a_overlap, plan.delay_wgrad_compute;
// sim/training/ep_overlap.hpp): the paired layer's two-stream time derived by hand, the phases a
// layer's ops split into, the extra warm-up forward, the rules Megatron-core enforces, and the
// step: the all-to-alls of the paired passes partly hidden, the warm-up's and cool-down's not.
#include <gtest/gtest.h>

#include <cstdio>

#include "models/op_names.hpp"
#include "scenario/errors.hpp"
#include "scenario/load.hpp"
#include "sim/memory/activations.hpp"
#include "sim/memory/memory_report.hpp"
#include "sim/training/ep_overlap.hpp"
#include "sim/training/pipeline_schedule.hpp"
#include "sim/training/step_graph.hpp"
#include "sim/training/training_report.hpp"

namespace twinsim {
namespace {

// attention 2, experts 3 forward; backward attention 2 + 1 (dgrad + wgrad), experts 3 + 2;
// each all-to-all 4 (dispatch, combine, both passes)
MoeLayerPhases phases() {
  MoeLayerPhases p;
  p.attn_fwd = 2, p.mlp_fwd = 3, p.dispatch_fwd = 4, p.combine_fwd = 4;
  p.attn_dgrad = 2, p.attn_wgrad = 1, p.mlp_dgrad = 3, p.mlp_wgrad = 2, p.dispatch_bwd = 4, p.combine_bwd = 4;
  return p;
}

// One layer, weight gradients with their input gradients. Comm stream | compute stream:
// B.combine 0-4        | F.attn 0-2
// F.dispatch 4-8       | B.experts (3 + 2) 4-9 (after B.combine)
// B.dispatch 9-13      | F.experts 9-12 (after F.dispatch, 8)
// F.combine 13-17      | B.attn (2 + 1) 13-16 (after B.dispatch)
// 17 against 13 of compute and 16 of all-to-alls (29 run one after another): 4 exposed, 1/4.
TEST(EpOverlap, OneLayerPairByHand) {
  EXPECT_DOUBLE_EQ(combined_1f1b_s(phases(), phases(), 1, false), 17);
  EXPECT_DOUBLE_EQ(ep_exposed_share(phases(), 1, false), 4.0 / 16);
}

// --delay-wgrad-compute: the experts' wgrad (2) runs after their dgrad, beside B.dispatch; the
// attention's (1) after the layer:
// B.combine 0-4 | F.attn 0-2; F.dispatch 4-8 | B.experts dgrad 4-7; B.dispatch 8-12 |
// experts wgrad 7-9, F.experts 9-12; F.combine 12-16 | B.attn dgrad 12-14, attn wgrad 14-15.
// 16: 3 exposed of 16. Two layers: the second starts with B.combine at 16 (comm stream) and
// the attention wgrad then F.attn at max(14 + 1, 16) = 16-18; F.dispatch 20-24 | B.experts
// dgrad 20-23; B.dispatch 24-28 | wgrad 23-25, F.experts 25-28; F.combine 28-32 | B.attn
// 28-30, wgrad 30-31: 32 against 26 of compute, 6 exposed of 32.
TEST(EpOverlap, DelayedWeightGradientsByHand) {
  EXPECT_DOUBLE_EQ(combined_1f1b_s(phases(), phases(), 1, true), 16);
  EXPECT_DOUBLE_EQ(ep_exposed_share(phases(), 1, true), 3.0 / 16);
  EXPECT_DOUBLE_EQ(combined_1f1b_s(phases(), phases(), 2, true), 32);
  EXPECT_DOUBLE_EQ(ep_exposed_share(phases(), 2, true), 6.0 / 32);
}

// Compute 2x slower while an all-to-all runs beside it (one layer, no delay): B.combine 0-4 |
// F.attn 2 of work at half speed 0-4; F.dispatch 4-8 | B.experts 2 of 5 done by 8, the other
// 3 alone 8-11; B.dispatch 11-15 | F.experts 2 of 3 by 15, 1 alone 15-16; F.combine 16-20 |
// B.attn 2 of 3 by 20, 1 alone 20-21. 21 against 13 of compute alone: 8 of 16 exposed.
TEST(EpOverlap, ComputeSlowedBesideTheAllToAllsByHand) {
  EXPECT_DOUBLE_EQ(combined_1f1b_s(phases(), phases(), 1, false, {2, 1}), 21);
  EXPECT_DOUBLE_EQ(ep_exposed_share(phases(), 1, false, {2, 1}), 8.0 / 16);
}

// All-to-alls 2x slower while compute runs beside them: B.combine 1 of 4 by 2 (F.attn 0-2),
// 3 alone 2-5; F.dispatch from 5 | B.experts 5-10, 2.5 of 4 done by 10, 1.5 alone 10-11.5;
// B.dispatch from 11.5 | F.experts 11.5-14.5, 1.5 done, 2.5 alone 14.5-17; F.combine from 17 |
// B.attn 17-20, 1.5 done, 2.5 alone 20-22.5. 22.5: 9.5 of 16 exposed.
TEST(EpOverlap, AllToAllsSlowedBesideTheComputeByHand) {
  EXPECT_DOUBLE_EQ(combined_1f1b_s(phases(), phases(), 1, false, {1, 2}), 22.5);
  EXPECT_DOUBLE_EQ(ep_exposed_share(phases(), 1, false, {1, 2}), 9.5 / 16);
}

// Slowed enough, the pair is slower than its passes one after another: the share stops at 1.
TEST(EpOverlap, ShareStopsAtAllExposed) {
  EXPECT_GT(combined_1f1b_s(phases(), phases(), 1, false, {4, 4}), 29);
  EXPECT_DOUBLE_EQ(ep_exposed_share(phases(), 1, false, {4, 4}), 1);
}

// On a DGX H100 the compute keeps 108 of 132 SMs beside NCCL's 24 channels; the all-to-all
// runs at half its rate beside a GEMM (ep_overlap.cpp: NCCL issue #1433's 2x); the held-out
// coconet measurements (1.94, 2.18, 2.26x) lie within 15% of it.
TEST(EpOverlap, SlowdownsOfAnH100Node) {
  const CorunSlowdowns h100 = ep_corun_slowdowns(catalog_node("dgx-h100"), false);
  EXPECT_DOUBLE_EQ(h100.compute, 132.0 / 108);
  for (const double held_out : {206.4 / 106.6, 381.5 / 174.8, 681.3 / 301.1})
    EXPECT_NEAR(h100.comm, held_out, 0.15 * held_out);
}

TEST(EpOverlap, NothingToHideBehindOrNothingToHide) {
  MoeLayerPhases comm_only;
  comm_only.dispatch_fwd = comm_only.combine_fwd = comm_only.dispatch_bwd = comm_only.combine_bwd = 4;
  EXPECT_DOUBLE_EQ(ep_exposed_share(comm_only, 3, true), 1);  // the four all-to-alls in a row
  MoeLayerPhases compute_only = phases();
  compute_only.dispatch_fwd = compute_only.combine_fwd = compute_only.dispatch_bwd = compute_only.combine_bwd = 0;
  EXPECT_DOUBLE_EQ(ep_exposed_share(compute_only, 3, true), 0);
  EXPECT_DOUBLE_EQ(combined_1f1b_s(compute_only, compute_only, 3, true), 3 * 13);
}

OpTime op(std::string_view name, TimeCategory c, double fwd, double dgrad, double wgrad) {
  OpTime t;
  t.name = std::string(name);
  t.category = c;
  t.fwd_s = fwd, t.dgrad_s = dgrad, t.wgrad_s = wgrad;
  return t;
}

// The ops before the dispatch and after the combine are the attention side, those between
// the experts'; the count exchange goes with the dispatch. No host time: the passes' compute
// is the ops' (forward 1 + 0.5 + 3 + 0.5 = 5), so nothing is scaled.
TEST(EpOverlap, PhasesOfTheLayersOps) {
  LayerCost lc;
  const TimeCategory compute = TimeCategory::compute, ep = TimeCategory::ep_comm;
  lc.ops = {op("attn.qkv", compute, 1, 1, 1),
            op(op_names::kMoeCounts, ep, 0.1, 0, 0),
            op(op_names::kMoePermute, compute, 0.5, 0.5, 0),
            op(op_names::kMoeDispatch, ep, 2, 2, 0),
            op(op_names::kMoeExpertsDown, compute, 3, 3, 3),
            op(op_names::kMoeCombine, ep, 2.5, 2.5, 0),
            op(op_names::kMoeUnpermute, compute, 0.5, 0.5, 0)};
  const MoeLayerPhases p = moe_layer_phases(lc);
  EXPECT_DOUBLE_EQ(p.attn_fwd, 2);
  EXPECT_DOUBLE_EQ(p.mlp_fwd, 3);
  EXPECT_DOUBLE_EQ(p.dispatch_fwd, 2.1);
  EXPECT_DOUBLE_EQ(p.combine_fwd, 2.5);
  EXPECT_DOUBLE_EQ(p.dispatch_bwd, 2);
  EXPECT_DOUBLE_EQ(p.combine_bwd, 2.5);
  EXPECT_DOUBLE_EQ(p.attn_dgrad, 2);
  EXPECT_DOUBLE_EQ(p.attn_wgrad, 1);
  EXPECT_DOUBLE_EQ(p.mlp_dgrad, 3);
  EXPECT_DOUBLE_EQ(p.mlp_wgrad, 3);
}

// Megatron-core's schedules.py warms up with one forward more under the overlap: pp 2, v 2,
// stage 0 warms up with (2 - 0 - 1) * 2 + (2 - 1) * 2 = 4 forwards, then 5; the first steady
// forward precedes the first backward, so 5, then 6, forwards lead. pp 1: F0, then F1 beside B0.
TEST(EpOverlap, OneMoreWarmupForward) {
  auto leading_forwards = [](const std::vector<PipelineSlot>& order) {
    int n = 0;
    while (n < static_cast<int>(order.size()) && order[n].forward) ++n;
    return n;
  };
  EXPECT_EQ(leading_forwards(stage_schedule(Schedule::interleaved, 2, 0, 8, 2)), 5);
  EXPECT_EQ(leading_forwards(stage_schedule(Schedule::interleaved, 2, 0, 8, 2, 1)), 6);
  EXPECT_EQ(stage_schedule(Schedule::interleaved, 2, 0, 8, 2, 1).size(), 2u * 8 * 2);
  EXPECT_EQ(leading_forwards(stage_schedule(Schedule::one_f_one_b, 1, 0, 8, 1)), 1);
  EXPECT_EQ(leading_forwards(stage_schedule(Schedule::one_f_one_b, 1, 0, 8, 1, 1)), 2);
}

// The memory report holds that forward's activations too: interleaved pp 4, v 2 keeps Megatron's
// warm-up (pp - stage - 1) * 2 + (v - 1) * pp, +1 in flight, +1 with the overlap (stage 0:
// 6 + 4 + 1 + 1 = 12; stage 3: 0 + 4 + 1 + 1 = 6), still at most m * v (m 2: 4); pp 1 holds
// two micro-batches (the forward beside the previous one's backward), one where m is 1.
TEST(EpOverlap, OneMoreChunkInFlightInMemory) {
  Plan p;
  p.pp = 4, p.schedule = Schedule::interleaved, p.virtual_stages = 2, p.ep = 8;
  EXPECT_EQ(chunks_in_flight(p, 0, 16), 11);
  p.moe_a2a_overlap = true;
  EXPECT_EQ(chunks_in_flight(p, 0, 16), 12);
  EXPECT_EQ(chunks_in_flight(p, 3, 16), 6);
  EXPECT_EQ(chunks_in_flight(p, 0, 2), 4);
  Plan flat;
  flat.ep = 8, flat.moe_a2a_overlap = true;
  EXPECT_EQ(chunks_in_flight(flat, 0, 16), 2);
  EXPECT_EQ(chunks_in_flight(flat, 0, 1), 1);
}

// The Qwen3-235B-A22B judge's plan (megatron-bridge-qwen3-235b-a22b-h100-25.11.yaml), `sets` on top.
Scenario qwen3_235b(const std::vector<std::string>& sets = {}) {
  return load_scenario_text(R"(
model: qwen3-235b-a22b
cluster: dgx-h100
stack: {preset: megatron-core, grad_reduce_fp32: false}
training: {seq_len: 4096, global_batch: 2048, micro_batch: 1, precision: fp8, optimizer: adam}
plan: {tp: 2, pp: 8, dp: 16, ep: 32, expert_tp: 1, sequence_parallel: true, zero: 1, recompute: none,
       schedule: interleaved, virtual_stages: 4, stage_layers: [11, 12, 12, 12, 12, 12, 12, 11]}
)",
                            sets);
}

const std::vector<std::string> kOverlap = {"plan.moe_a2a_overlap=true", "plan.delay_wgrad_compute=true"};

std::vector<std::string> with_overlap(std::vector<std::string> sets) {
  sets.insert(sets.begin(), kOverlap.begin(), kOverlap.end());
  return sets;
}

TEST(EpOverlap, RefusedWhereMegatronCoreRefusesIt) {
  EXPECT_NO_THROW(qwen3_235b(kOverlap));
  EXPECT_NO_THROW(qwen3_235b({"plan.ep=1"}));  // each variant below valid without the overlap
  EXPECT_NO_THROW(qwen3_235b({"plan.recompute=full"}));
  EXPECT_THROW(qwen3_235b({"plan.delay_wgrad_compute=true"}), ScenarioError);  // needs the overlap
  EXPECT_THROW(qwen3_235b(with_overlap({"plan.ep=1"})), ScenarioError);        // needs expert parallelism
  EXPECT_THROW(qwen3_235b(with_overlap({"plan.recompute=full"})), ScenarioError);
  EXPECT_NO_THROW(qwen3_235b({"plan.schedule=1f1b", "plan.virtual_stages=1"}));
  EXPECT_THROW(qwen3_235b(with_overlap({"plan.schedule=1f1b", "plan.virtual_stages=1"})),
               ScenarioError);  // pp 8 without virtual stages
}

// The step: the paired passes' all-to-alls go partly beside the compute, so less of the
// step waits for them; what the overlap saves is at most what the blocking all-to-alls cost.
TEST(EpOverlap, StepHidesPartOfTheAllToAlls) {
  const TrainingPrediction blocking = predict_training(qwen3_235b());
  const TrainingPrediction overlapped = predict_training(qwen3_235b(kOverlap));
  const Scenario s = qwen3_235b(kOverlap);
  const MoeLayerPhases p = moe_layer_phases(price_step(s).layers.back());
  std::printf(
      "Qwen3-235B MoE layer: compute fwd %.2f ms bwd %.2f ms, all-to-alls fwd %.2f ms bwd %.2f ms; "
      "exposed share (3 layers a chunk) %.2f; step %.2f s -> %.2f s, EP %.2f s -> %.2f s\n",
      1e3 * (p.attn_fwd + p.mlp_fwd), 1e3 * (p.attn_dgrad + p.attn_wgrad + p.mlp_dgrad + p.mlp_wgrad),
      1e3 * (p.dispatch_fwd + p.combine_fwd), 1e3 * (p.dispatch_bwd + p.combine_bwd),
      ep_exposed_share(p, 3, true, ep_corun_slowdowns(s.cluster, deepep_runs_ep_alltoalls(s))), blocking.step_s,
      overlapped.step_s, blocking.breakdown.ep_comm_s, overlapped.breakdown.ep_comm_s);
  EXPECT_LT(overlapped.breakdown.ep_comm_s, blocking.breakdown.ep_comm_s);
  EXPECT_LT(overlapped.step_s, blocking.step_s);
  EXPECT_GT(overlapped.step_s, blocking.step_s - blocking.breakdown.ep_comm_s);
  EXPECT_GT(overlapped.breakdown.ep_comm_s, 0);  // the warm-up's and cool-down's stay exposed
}

// The memory report counts the overlap's extra warm-up forward: a higher peak on the same plan.
TEST(EpOverlap, MemoryReportHoldsTheExtraForward) {
  EXPECT_GT(predict_memory(qwen3_235b(kOverlap)).peak_bytes, predict_memory(qwen3_235b()).peak_bytes);
}

// Every simulated GPU on its own (full, per rank) and the folded replicas give the fast mode's
// step under the overlap: the EP stream and the pairs' ends are the same on each GPU, inside a
// node (Qwen3-30B-A3B on PP 2, EP 8) and across two (PP 1, EP 16: F0, then each forward beside
// the previous backward, both holding the NICs).
TEST(EpOverlap, FidelitiesAgree) {
  for (const char* plan :
       {"{tp: 1, pp: 2, dp: 8, ep: 8, expert_tp: 1, zero: 1, recompute: none, schedule: interleaved, "
        "virtual_stages: 12, moe_a2a_overlap: true, delay_wgrad_compute: true}",
        "{tp: 1, pp: 1, dp: 16, ep: 16, expert_tp: 1, zero: 1, recompute: none, "
        "moe_a2a_overlap: true, delay_wgrad_compute: true}"}) {
    for (const char* dispatcher : {"alltoall", "deepep"}) {  // DeepEP's kernels and slowdowns too
      const Scenario s = load_scenario_text(R"(
model: {hf_config: qwen3-235b-a22b, layers: 48, hidden: 2048, heads: 32, kv_heads: 4, head_dim: 128,
        ffn_hidden: 6144, moe: {expert_ffn_hidden: 768}}
cluster: dgx-h100
stack: {preset: megatron-core, grad_reduce_fp32: false, moe_dispatcher: )" +
                                            std::string(dispatcher) + R"(}
training: {seq_len: 4096, global_batch: 128, micro_batch: 1, precision: fp8, optimizer: adam}
plan: )" + std::string(plan) + "\n");
      const double fast = predict_training(s, "", Fidelity::fast).step_s;
      EXPECT_NEAR(predict_training(s, "", Fidelity::full).step_s, fast, 1e-9 * fast) << plan << dispatcher;
      EXPECT_NEAR(predict_training(s, "", Fidelity::full_per_rank).step_s, fast, 1e-9 * fast) << plan << dispatcher;
    }
  }
}

}  // namespace
}  // namespace twinsim
