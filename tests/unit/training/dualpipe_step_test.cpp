// plan.schedule: dualpipe in a scenario (docs/scenario/ext-keys-plan.md): the rules dualpipe.py
// asserts, two stages' parameters and pp + 1 chunks' activations a rank (the DualPipe README's
// table), the step's paired passes hiding EP all-to-alls, the fidelities agreeing, and
// DeepSeek-V3's pairs paying for the SMs their all-to-alls hold (ep_corun_slowdowns).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "scenario/errors.hpp"
#include "scenario/load.hpp"
#include "sim/cost/moe_dispatch_deepep.hpp"
#include "sim/memory/activations.hpp"
#include "sim/memory/memory_report.hpp"
#include "sim/memory/stage_layers.hpp"
#include "sim/memory/weights.hpp"
#include "sim/training/ep_overlap.hpp"
#include "sim/training/step_graph.hpp"
#include "sim/training/training_report.hpp"

namespace twinsim {
namespace {

// A 48-layer Qwen3-30B-A3B-shaped MoE on 4 stages (12 layers each), EP 8 in a node: 32 GPUs,
// global batch 64 / (micro-batch 1 x dp 8) = 8 micro-batches = 2 pp.
Scenario dualpipe_moe(const std::vector<std::string>& sets = {}) {
  return load_scenario_text(R"(
model: {hf_config: qwen3-235b-a22b, layers: 48, hidden: 2048, heads: 32, kv_heads: 4, head_dim: 128,
        ffn_hidden: 6144, moe: {expert_ffn_hidden: 768}}
cluster: dgx-h100
stack: {preset: megatron-core, grad_reduce_fp32: false}
training: {seq_len: 4096, global_batch: 64, micro_batch: 1, precision: bf16, optimizer: adam}
plan: {tp: 1, pp: 4, dp: 8, ep: 8, expert_tp: 1, zero: 1, recompute: none, schedule: dualpipe}
)",
                            sets);
}

TEST(DualPipeStep, RefusedWhereDualpipePyAsserts) {
  EXPECT_NO_THROW(dualpipe_moe());
  EXPECT_NO_THROW(dualpipe_moe({"plan.pp=2", "plan.dp=16", "training.global_batch=64"}));
  // an odd number of ranks (pp 3 of 48 layers, 16 each): no rank pairs with its mirror
  EXPECT_THROW(dualpipe_moe({"plan.pp=3"}), ScenarioError);
  EXPECT_NO_THROW(dualpipe_moe({"plan.pp=3", "plan.schedule=1f1b"}));
  // 6 micro-batches, fewer than 2 pp = 8; 10 micro-batches are enough; 9 are odd (pp 2: 2 pp = 4)
  EXPECT_THROW(dualpipe_moe({"training.global_batch=48"}), ScenarioError);
  EXPECT_NO_THROW(dualpipe_moe({"training.global_batch=80"}));
  EXPECT_THROW(dualpipe_moe({"plan.pp=2", "plan.dp=16", "training.global_batch=144"}), ScenarioError);
  // its own pairs: not with Megatron-core's; one chunk a direction: no virtual stages
  EXPECT_THROW(dualpipe_moe({"plan.moe_a2a_overlap=true"}), ScenarioError);
  EXPECT_THROW(dualpipe_moe({"plan.virtual_stages=2"}), ScenarioError);
  EXPECT_THROW(dualpipe_moe({"plan.zero=3"}), ScenarioError);  // sharded gradients: not modelled
  EXPECT_NO_THROW(dualpipe_moe({"plan.zero=3", "plan.schedule=1f1b"}));
}

TEST(DualPipeStep, EachRankHoldsTwoStagesOfParameters) {
  // README: "Parameter Per Device 2x". Rank 1 holds stages 1 and 2: 24 of the 48 layers; over
  // all ranks the model is held twice, embedding and head included (on ranks 0 and 3 both).
  const Scenario dual = dualpipe_moe();
  const Scenario one = dualpipe_moe({"plan.schedule=1f1b"});
  EXPECT_EQ(stage_layers(dual.model, dual.plan, 1).total(), 24);
  EXPECT_EQ(stage_layers(one.model, one.plan, 1).total(), 12);
  std::int64_t dual_all = 0, one_all = 0;
  for (int r = 0; r < 4; ++r) {
    dual_all += stage_params(dual.model, dual.plan, r).total();
    one_all += stage_params(one.model, one.plan, r).total();
  }
  EXPECT_EQ(dual_all, 2 * one_all);
  // ranks 0 and 3 alike (each: embedding, 24 layers, final norm, head)
  EXPECT_EQ(stage_params(dual.model, dual.plan, 0).total(), stage_params(dual.model, dual.plan, 3).total());
}

TEST(DualPipeStep, MemoryHoldsPipelineDepthPlusOneChunks) {
  // README: "Activation Per Device PP+1" (sim/training/dualpipe_schedule.hpp's order keeps
  // pp + 1 chunk forwards in flight at most: dualpipe_schedule_test); 1F1B's stage 0 keeps pp.
  const Scenario dual = dualpipe_moe();
  EXPECT_EQ(chunks_in_flight(dual.plan, 0, 8), 5);
  EXPECT_EQ(chunks_in_flight(dual.plan, 2, 8), 5);
  const MemoryReport dm = predict_memory(dual), om = predict_memory(dualpipe_moe({"plan.schedule=1f1b"}));
  EXPECT_GT(dm.peak_bytes, om.peak_bytes);  // twice the weights, one more chunk in flight
}

// The paired passes' EP all-to-alls go beside the other chunk's compute: less of the step waits
// for them than under 1F1B, where every all-to-all blocks; DualPipe's order has no more
// forwards and backwards than 1F1B's, so the step is shorter.
TEST(DualPipeStep, PairsHideEpAllToAlls) {
  const TrainingPrediction one = predict_training(dualpipe_moe({"plan.schedule=1f1b", "training.global_batch=128"}));
  const TrainingPrediction dual = predict_training(dualpipe_moe({"training.global_batch=128"}));
  std::printf("MoE pp 4, 16 micro-batches: 1f1b step %.3f s (EP %.3f s), dualpipe %.3f s (EP %.3f s)\n", one.step_s,
              one.breakdown.ep_comm_s, dual.step_s, dual.breakdown.ep_comm_s);
  EXPECT_LT(dual.breakdown.ep_comm_s, one.breakdown.ep_comm_s);
  EXPECT_GT(dual.breakdown.ep_comm_s, 0);  // the unpaired passes' stay exposed
}

// Every simulated GPU (full, per rank) gives the fast mode's step: both directions' transfers
// and the pairs' ends are the same on every GPU of a stage.
TEST(DualPipeStep, FidelitiesAgree) {
  const Scenario s = dualpipe_moe();
  const double fast = predict_training(s, "", Fidelity::fast).step_s;
  EXPECT_NEAR(predict_training(s, "", Fidelity::full).step_s, fast, 1e-9 * fast);
  EXPECT_NEAR(predict_training(s, "", Fidelity::full_per_rank).step_s, fast, 1e-9 * fast);
}

Scenario dualpipe_deepseek(const std::vector<std::string>& sets = {}) {
  return load_scenario_file(std::string(TWINSIM_SOURCE_DIR) + "/scenarios/training/deepseek-v3-h800.yaml", sets);
}

// DeepSeek-V3 §3.2.2: 20 of the H800's 132 SMs run the all-to-all kernels beside the overlapped
// chunks' compute. The pairs already pay an SM share, in one home (ep_corun_slowdowns): the
// megatron-core stack's NCCL all-to-all holds the node's 24 channels, compute 132 / (132 - 24)
// = 1.2222x slower beside it (and the all-to-all 2x beside a GEMM). §3.2.2's 20 SMs would be
// 132 / 112 = 1.1786x: less than what is charged, so the step would be shorter, not longer.
TEST(DualPipeStep, DeepseekPairsPayTheCommunicationSmShare) {
  const Scenario s = dualpipe_deepseek();
  const CorunSlowdowns charged = ep_corun_slowdowns(s.cluster, deepep_runs_ep_alltoalls(s));
  EXPECT_NEAR(charged.compute, 132.0 / 108.0, 1e-12);
  EXPECT_NEAR(charged.comm, 2.0, 1e-12);
  EXPECT_NEAR(deepep_compute_slowdown(s.cluster.gpu), 132.0 / 112.0, 1e-12);  // §3.2.2's share
  const StepCosts costs = price_step(s);
  const MoeLayerPhases p = moe_layer_phases(costs.layers[costs.layer_cost_index[s.model.layers - 1]]);
  const int layers = 4;  // stage 2's chunk (stage_layers)
  const double paid = ep_exposed_share(p, layers, false, charged);
  const double sm20 = ep_exposed_share(p, layers, false, {132.0 / 112.0, charged.comm});
  const double free_sms = ep_exposed_share(p, layers, false, {1.0, charged.comm});
  std::printf(
      "DeepSeek-V3 MoE layer: compute fwd %.2f ms bwd %.2f ms (weight gradients %.2f), all-to-alls fwd %.2f ms "
      "bwd %.2f ms; exposed share (4 layers a chunk): 24 SMs %.3f, 20 SMs %.3f, none %.3f\n",
      1e3 * (p.attn_fwd + p.mlp_fwd), 1e3 * (p.attn_dgrad + p.attn_wgrad + p.mlp_dgrad + p.mlp_wgrad),
      1e3 * (p.attn_wgrad + p.mlp_wgrad), 1e3 * (p.dispatch_fwd + p.combine_fwd),
      1e3 * (p.dispatch_bwd + p.combine_bwd), paid, sm20, free_sms);
  EXPECT_GT(paid, sm20);  // the SMs the all-to-all holds are paid for in the share
  EXPECT_GT(sm20, free_sms);
  EXPECT_LT(paid, 1.0);  // not at the clamp: the share moves with the SMs
  // the whole step: NCCL's 20 channels (§3.2.2's SM count) shorten it
  const double step24 = predict_training(s).step_s;
  const double step20 = predict_training(dualpipe_deepseek({"cluster.nccl_channels=20"})).step_s;
  std::printf("DeepSeek-V3 DualPipe step: 24 SMs to the all-to-alls %.3f s, 20 SMs %.3f s\n", step24, step20);
  EXPECT_LT(step20, step24);
}

}  // namespace
}  // namespace twinsim
