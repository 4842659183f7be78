// The closed-form pass against the memory model and the event engine.
#include <gtest/gtest.h>

#include <cstdio>

#include <algorithm>
#include <cmath>
#include <vector>

#include "scenario/load.hpp"
#include "sim/memory/memory_report.hpp"
#include "sim/cost/collective_cost.hpp"
#include "sim/memory/weights.hpp"
#include "sim/search/analytic.hpp"
#include "sim/training/fabric_share.hpp"
#include "sim/training/rank_layout.hpp"
#include "sim/training/training_report.hpp"
#include "sim/training/transfer_bytes.hpp"
#include "tests/unit/scenario/device_alone.hpp"

namespace twinsim {
namespace {

// The search space of `base` over GPU counts min_gpus..max_gpus, micro-batches up to
// max_micro_batch and context parallelism up to max_cp (the other options their defaults).
SearchSpace space_of(const Scenario& base, int min_gpus, int max_gpus, int max_micro_batch, int max_cp) {
  SearchSpaceOptions o;
  o.min_gpus = min_gpus, o.max_gpus = max_gpus, o.max_micro_batch = max_micro_batch, o.max_cp = max_cp;
  return make_search_space(base, o);
}

Scenario llama8b() {
  return test::device_alone(R"(
model: llama3-8b
cluster: dgx-h100
training: {seq_len: 4096, global_batch: 64, micro_batch: 1, precision: bf16}
plan: {tp: 1, pp: 1, dp: 1}
)");
}

// Checking only the first, second and last stage gives predict_memory's peak (the
// maximum over every stage), on every 7th plan of 8 to 64 GPUs.
TEST(Analytic, PeakEqualsPredictMemory) {
  const Scenario base = llama8b();
  const SearchSpace space = space_of(base, 8, 64, 2, 2);
  AnalyticModel model(base, space);
  int n = 0, checked = 0;
  for_each_candidate(space, [&](const Candidate& c) {
    if (n++ % 7 != 0) return;
    const MemoryReport ref = predict_memory(candidate_scenario(base, c));
    const AnalyticEstimate e = model.estimate(c);
    EXPECT_EQ(e.peak_bytes, ref.peak_bytes) << describe(c);
    EXPECT_EQ(e.fits, ref.fits) << describe(c);
    ++checked;
  });
  EXPECT_GT(checked, 200);
}

// The estimate stays within 20% of the event engine's fast-mode step on plans of
// different shapes (the engine is the reference: it schedules every task).
TEST(Analytic, StepTimeTracksTheEventEngine) {
  const Scenario base = llama8b();
  const SearchSpace space = space_of(base, 1, 64, 2, 2);
  AnalyticModel model(base, space);
  auto plan = [](int tp, int pp, int dp, int cp, int mb, int zero, Recompute r, Schedule s, int v, bool sp) {
    Candidate c;
    c.tp = tp, c.pp = pp, c.dp = dp, c.cp = cp, c.micro_batch = mb, c.zero = zero, c.recompute = r;
    c.schedule = s, c.virtual_stages = v, c.sequence_parallel = sp;
    return c;
  };
  const Candidate plans[] = {
      plan(8, 1, 8, 1, 1, 1, Recompute::selective, Schedule::gpipe, 1, true),
      plan(4, 4, 4, 1, 1, 1, Recompute::none, Schedule::one_f_one_b, 1, true),
      plan(2, 8, 2, 2, 2, 0, Recompute::full, Schedule::one_f_one_b, 1, false),
      plan(8, 4, 2, 1, 1, 1, Recompute::selective, Schedule::interleaved, 2, true),
      plan(1, 1, 64, 1, 1, 3, Recompute::full, Schedule::gpipe, 1, false),
      plan(1, 2, 1, 1, 1, 0, Recompute::full, Schedule::one_f_one_b, 1, false),
  };
  for (const Candidate& c : plans) {
    const double sim = predict_training(candidate_scenario(base, c)).step_s;
    const double est = model.estimate(c).step_s;
    EXPECT_NEAR(est / sim, 1.0, 0.20) << describe(c) << ": estimate " << est << " s, engine " << sim << " s";
  }
}

// Hybrid sharding (plan.dp_replicate) is priced by the same zero_comm functions in the engine
// and the estimate: Llama 3 8B ZeRO-3 over 64 H100s (8 nodes), fully sharded, with 8 replicas
// of a node each (HSDP: the gathers over NVLink, each layer's shard all-reduced between the
// nodes) and with 2 replicas of 4 nodes. The estimate stays within 20% of the engine's step
// (as StepTimeTracksTheEventEngine asks) and moves with it: the same sign from full sharding.
TEST(Analytic, HybridShardingTracksTheEventEngine) {
  const Scenario base = llama8b();
  AnalyticModel model(base, space_of(base, 64, 64, 2, 1));
  Candidate c;
  c.tp = 1, c.pp = 1, c.dp = 64, c.cp = 1, c.micro_batch = 1, c.zero = 3, c.recompute = Recompute::full;
  c.schedule = Schedule::one_f_one_b, c.virtual_stages = 1;
  double est[3], sim[3];
  const int replicas[] = {1, 8, 2};
  for (int k = 0; k < 3; ++k) {
    c.dp_replicate = replicas[k];
    est[k] = model.estimate(c).step_s;
    sim[k] = predict_training(candidate_scenario(base, c)).step_s;
    std::printf("dp_replicate %d: estimate %.4f s, engine %.4f s\n", replicas[k], est[k], sim[k]);
    EXPECT_NEAR(est[k] / sim[k], 1.0, 0.20) << "dp_replicate " << replicas[k];
  }
  for (int k = 1; k < 3; ++k) EXPECT_EQ(est[k] < est[0], sim[k] < sim[0]) << "dp_replicate " << replicas[k];
  EXPECT_NE(sim[1], sim[0]);
}

// The search explores hybrid sharding for its ZeRO-3 plans: Llama 3 8B on 16 H100s (two DGX
// nodes of 8). By hand, one shard group a node holds the 8 GPUs' tp x dp ranks, so a stage of
// tp x dp = 16 GPUs (pp 1) has 16 / 8 = 2 replicas, and one of 8 GPUs (pp 2) none; every
// ZeRO-3 plan of pp 1 has an HSDP twin (hsdp2), no ZeRO 0-2 plan has one (the scenario sets
// none). The five fastest HSDP plans by the closed form are re-priced by the event engine:
// each within 20% of it (as StepTimeTracksTheEventEngine asks), and each faster or slower than
// its fully-sharded twin in both alike. On a named DeepSpeed stack (stack.zero_hybrid_sharding
// false) the search tries none.
TEST(Analytic, SearchedHybridShardingPlansTrackTheEventEngine) {
  const Scenario base = llama8b();
  const SearchSpace space = space_of(base, 16, 16, 1, 1);
  ASSERT_TRUE(space.hybrid_sharding);
  AnalyticModel model(base, space);
  std::vector<std::pair<double, Candidate>> hsdp;
  int zero3_pp1 = 0;
  for_each_candidate(space, [&](const Candidate& c) {
    if (c.dp_replicate == 1) {
      zero3_pp1 += c.zero == 3 && c.pp == 1 ? 1 : 0;
      return;
    }
    EXPECT_EQ(c.zero, 3) << describe(c);
    EXPECT_EQ(c.pp, 1) << describe(c);
    EXPECT_EQ(c.dp_replicate, c.tp * c.dp / 8) << describe(c);
    hsdp.emplace_back(model.estimate(c).step_s, c);
  });
  EXPECT_EQ(static_cast<int>(hsdp.size()), zero3_pp1);
  ASSERT_GE(hsdp.size(), 5u);
  std::sort(hsdp.begin(), hsdp.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (std::size_t i = 0; i < 5; ++i) {
    Candidate c = hsdp[i].second;
    const double est = hsdp[i].first, sim = predict_training(candidate_scenario(base, c)).step_s;
    c.dp_replicate = 1;  // its fully-sharded twin
    const double est_full = model.estimate(c).step_s, sim_full = predict_training(candidate_scenario(base, c)).step_s;
    std::printf("%s hsdp%d: estimate %.4f s, engine %.4f s; fully sharded %.4f / %.4f s\n", describe(c).c_str(),
                hsdp[i].second.dp_replicate, est, sim, est_full, sim_full);
    EXPECT_NEAR(est / sim, 1.0, 0.20) << describe(hsdp[i].second);
    EXPECT_EQ(est < est_full, sim < sim_full) << describe(hsdp[i].second);
  }
  const Scenario deepspeed = load_scenario_text(R"(
model: llama3-8b
cluster: dgx-h100
training: {seq_len: 4096, global_batch: 64, micro_batch: 1, precision: bf16}
plan: {tp: 1, pp: 1, dp: 1}
stack: deepspeed
)");
  const SearchSpace none = space_of(deepspeed, 16, 16, 1, 1);
  EXPECT_FALSE(none.hybrid_sharding);
  int replicated = 0;
  for_each_candidate(none, [&](const Candidate& c) { replicated += c.dp_replicate > 1 ? 1 : 0; });
  EXPECT_EQ(replicated, 0);
}

// An oversubscribed fabric (sim/training/fabric_share.hpp) is priced alike by fast mode and
// the estimate: Llama 3 8B, TP 8 x PP 4 x DP 2, stages of 2 nodes on rail-optimised leaves of
// 2 nodes at 2:1 (a rail's 2 ports share 1 NIC rate: each send at half rate, slowdown 2).
TEST(Analytic, OversubscribedFabricPricedInFastModeAndEstimate) {
  auto behind = [](double ratio) {
    Scenario s = llama8b();
    s.cluster.fabric.nodes_per_leaf = 2;
    s.cluster.fabric.oversubscription = ratio;
    return s;
  };
  Candidate c;
  c.tp = 8, c.pp = 4, c.dp = 2, c.cp = 1, c.micro_batch = 1, c.zero = 1, c.recompute = Recompute::selective;
  c.schedule = Schedule::one_f_one_b, c.virtual_stages = 1, c.sequence_parallel = true;
  EXPECT_DOUBLE_EQ(pipeline_fabric_slowdown(behind(2).cluster, candidate_scenario(behind(2), c).plan), 2.0);
  EXPECT_DOUBLE_EQ(pipeline_fabric_slowdown(behind(1).cluster, candidate_scenario(behind(1), c).plan), 1.0);
  c.dp = 1;  // stages of one node, under half a leaf: priced as not crossing (the neighbour may share it)
  EXPECT_DOUBLE_EQ(pipeline_fabric_slowdown(behind(2).cluster, candidate_scenario(behind(2), c).plan), 1.0);
  c.dp = 2;
  double est[2], sim[2];
  for (int k = 0; k < 2; ++k) {
    const Scenario base = behind(k == 0 ? 1.0 : 2.0);
    AnalyticModel model(base, space_of(base, 64, 64, 1, 1));
    est[k] = model.estimate(c).step_s;
    sim[k] = predict_training(candidate_scenario(base, c)).step_s;
  }
  EXPECT_GT(sim[1], sim[0]);
  EXPECT_GT(est[1], est[0]);
  EXPECT_NEAR(est[1] / sim[1], 1.0, 0.20) << "estimate " << est[1] << " s, engine " << sim[1] << " s";
}

// With sequence parallelism the step ends with the TP all-reduce of the replicated grads
// (Megatron-core finalize_model_grads): the estimate adds it for the first stage, as the
// engine's dp.grad_reduce.tp task prices it (sim/training/step_graph.hpp tp_grad_sum_s).
TEST(Analytic, SequenceParallelAddsTheStepEndTpGradSum) {
  const Scenario base = test::device_alone(R"(
model: gpt2-medium
cluster: dgx-a100-80gb
training: {seq_len: 1024, global_batch: 8, micro_batch: 1}
plan: {tp: 4, pp: 2, dp: 1}
)");
  AnalyticModel model(base, space_of(base, 8, 8, 1, 1));
  Candidate c;
  c.tp = 4, c.pp = 2, c.dp = 1, c.micro_batch = 1, c.recompute = Recompute::none;
  c.schedule = Schedule::one_f_one_b, c.sequence_parallel = true;
  // by hand, the first stage of gpt2-medium: 12 layers of two LayerNorms (2 x 2048) and the
  // attention and fc2 biases (2 x 1024), and the 1024 x 1024 learned positions
  const double params = 12 * (2 * 2048 + 2 * 1024) + 1024 * 1024;
  const Scenario sp = candidate_scenario(base, c);
  const double bytes = params * grad_element_bytes(dp_gradient_dtype(sp.stack, sp.training->precision));
  const AnalyticEstimate e = model.estimate(c);
  EXPECT_DOUBLE_EQ(e.tp_grad_sum_s, collective_time_s(sp.cluster, CollectiveOp::all_reduce,
                                                      group_layout(sp.cluster, sp.plan, ParallelGroup::tp), bytes));
  EXPECT_DOUBLE_EQ(e.step_s, e.pipeline_s + e.dp_exposed_s + e.tp_grad_sum_s + e.optimizer_s);
  c.sequence_parallel = false;
  EXPECT_EQ(model.estimate(c).tp_grad_sum_s, 0.0);
}

// Across nodes a stage's DP buckets and its pipeline sends share its NIC (the step graph's
// stage NIC): the estimate follows the engine where that sharing sets the drain (measured
// 2026-11-25: estimate 1.565 s, engine 1.561 s; without the drain term 1.479 s, -5.3%).
TEST(Analytic, NicSharingAcrossNodesTracksTheEventEngine) {
  const Scenario base = test::device_alone(R"(
model: llama3-70b
cluster: dgx-h100
training: {seq_len: 4096, global_batch: 256, micro_batch: 1, precision: bf16}
plan: {tp: 8, pp: 8, dp: 16}
)");
  const SearchSpace space = space_of(base, 1024, 1024, 1, 1);
  AnalyticModel model(base, space);
  Candidate c;
  c.tp = 8, c.pp = 8, c.dp = 16, c.micro_batch = 1, c.zero = 1, c.recompute = Recompute::selective;
  c.schedule = Schedule::one_f_one_b, c.sequence_parallel = true;
  const double sim = predict_training(candidate_scenario(base, c)).step_s;
  const double est = model.estimate(c).step_s;
  EXPECT_NEAR(est / sim, 1.0, 0.03) << describe(c) << ": estimate " << est << " s, engine " << sim << " s";
}

// The stack's host time per micro-batch (StackSpec::host_microbatch_s) opens the forward of
// each micro-batch through a stage's first chunk: the batch's loading and the loss come once
// a micro-batch, not once a chunk. One stage: the GPU runs its m micro-batches one after
// another, so the step grows by m times it, in the engine and the estimate alike. p stages,
// 1F1B: the estimate's pace (the slowest stage, m times) and its fill (the other stages,
// once) take it (m + p - 1) times, and the engine's critical path crosses as many forwards.
// Interleaved over v chunks, the estimate's fill is the other stages over v, (m + (p - 1) / v)
// times; the engine's critical path crosses the m forwards of one stage's first chunk and at
// most the p - 1 other stages' once more: never the m v forwards of every chunk.
TEST(Analytic, HostTimePerMicroBatchOpensEachStagesFirstChunk) {
  const double host_s = 1e-3;
  const Scenario base = llama8b();  // 64 micro-batches of one sequence
  Scenario hosted = base;
  hosted.stack.host_microbatch_s = host_s;
  SearchSpaceOptions o;
  o.min_gpus = 1, o.max_gpus = 2, o.max_micro_batch = 1, o.max_cp = 1;
  AnalyticModel without(base, make_search_space(base, o)), with(hosted, make_search_space(hosted, o));
  struct Shape {
    int pp, v;
  };
  for (const Shape shape : {Shape{1, 1}, Shape{2, 1}, Shape{2, 2}}) {
    Candidate c;
    c.tp = 1, c.pp = shape.pp, c.dp = 1, c.micro_batch = 1, c.zero = 0, c.recompute = Recompute::full;
    c.schedule = shape.v > 1 ? Schedule::interleaved : Schedule::one_f_one_b, c.virtual_stages = shape.v;
    const double estimated = (64 + static_cast<double>(shape.pp - 1) / shape.v) * host_s;
    EXPECT_NEAR(with.estimate(c).step_s - without.estimate(c).step_s, estimated, 1e-9) << describe(c);
    const double engine = predict_training(candidate_scenario(hosted, c)).step_s -
                          predict_training(candidate_scenario(base, c)).step_s;
    if (shape.v == 1) {
      EXPECT_NEAR(engine, (64 + shape.pp - 1) * host_s, 1e-9) << describe(c);
    } else {
      EXPECT_GE(engine, 64 * host_s - 1e-9) << describe(c);
      EXPECT_LE(engine, (64 + shape.pp - 1) * host_s + 1e-9) << describe(c);
    }
  }
}

// Llama-3 70B's bf16 weights alone (2 bytes x 70.6B = 141 GB) exceed one 80 GB H100:
// no plan on a single GPU can fit (Meta's model card: 70.6B parameters).
TEST(Analytic, SeventyBillionDoesNotFitOnOneH100) {
  const Scenario base = test::device_alone(R"(
model: llama3-70b
cluster: dgx-h100
training: {seq_len: 8192, global_batch: 16, micro_batch: 1, precision: bf16}
plan: {tp: 1, pp: 1, dp: 1}
)");
  SearchSpaceOptions o;
  o.min_gpus = 1, o.max_gpus = 1;
  const SearchSpace space = make_search_space(base, o);
  AnalyticModel model(base, space);
  int fits = 0, n = 0;
  for_each_candidate(space, [&](const Candidate& c) {
    ++n;
    fits += model.estimate(c).fits;
  });
  EXPECT_GT(n, 0);
  EXPECT_EQ(fits, 0);
}

}  // namespace
}  // namespace twinsim

namespace twinsim {
namespace {

// Kendall's tau between two rankings of the same items: +1 the same order, -1 reversed.
double kendall_tau(const std::vector<double>& a, const std::vector<double>& b) {
  double agree = 0, pairs = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    for (std::size_t j = i + 1; j < a.size(); ++j) {
      const double s = (a[i] - a[j]) * (b[i] - b[j]);
      if (s == 0) continue;
      agree += s > 0 ? 1 : -1;
      ++pairs;
    }
  return pairs > 0 ? agree / pairs : 1.0;
}

struct GridStats {
  int plans = 0;
  double worst = 0;     // largest |estimate / engine - 1|
  double median = 0;
  double tau = 0;       // Kendall's tau of the two rankings
  double best_gap = 0;  // the engine's step of the estimate's best plan over the engine's best, - 1
};

// Every `stride`-th candidate of the search space, estimated and simulated (fast mode).
GridStats compare_grid(const Scenario& base, SearchSpaceOptions o, int stride) {
  const SearchSpace space = make_search_space(base, o);
  AnalyticModel model(base, space);
  std::vector<double> est, sim, err;
  int n = 0;
  for_each_candidate(space, [&](const Candidate& c) {
    if (n++ % stride != 0) return;
    est.push_back(model.estimate(c).step_s);
    sim.push_back(predict_training(candidate_scenario(base, c)).step_s);
    err.push_back(std::abs(est.back() / sim.back() - 1));
  });
  GridStats g;
  g.plans = static_cast<int>(est.size());
  g.worst = *std::max_element(err.begin(), err.end());
  std::vector<double> sorted = err;
  std::sort(sorted.begin(), sorted.end());
  g.median = sorted[sorted.size() / 2];
  g.tau = kendall_tau(est, sim);
  const std::size_t best_est = std::min_element(est.begin(), est.end()) - est.begin();
  g.best_gap = sim[best_est] / *std::min_element(sim.begin(), sim.end()) - 1;
  return g;
}

// The search ranks plans with the closed-form estimate and confirms the best with the
// engine, so the two must agree over the whole space: every ZeRO stage with and without
// overlap, recompute, schedule (interleaved 2-8 chunks), and tp/pp/dp/cp/ep mixes, for a
// dense and an MoE model. Measured 2026-11-25 (every 47th / 83rd plan of the space):
// Llama 3 8B on 8-64 GPUs, 1,523 plans: median |est/engine - 1| 0.6%, worst 29%, Kendall
// tau 0.97, the estimate's best plan the engine's best; Mixtral 8x7B on 16-64 GPUs, 2,395
// plans: median 0.8%, worst 44%, tau 0.95, best the engine's best. Before this session's
// drift fixes (ZeRO-2's per-layer reduces and ZeRO 2/3 without overlap, absent from the
// estimate; in the engine, whole-stage collectives per interleaved chunk, a ZeRO-3
// prefetch held back by blocking TP collectives, and a slot's first overlapped collective
// serialised behind its compute): tau 0.77 / 0.73, worst 90% / 96%. What is left is
// mostly ZeRO-3 under interleaved schedules of small chunks. The bounds leave some room.
// Measured 2026-11-26, once the data-parallel group took the CP ranks (gradient reductions
// and ZeRO over dp x cp, as Megatron-core; more plans vary their overlap) and the estimate
// ran a layer's ZeRO-3 backward gather and reduce-scatter side by side inside a node, as the
// engine's two streams do (it summed them, so gather-bound ZeRO-3 plans came out up to 62%
// slow), and the experts' gradients went over their own group: Llama 3 8B 1,689 plans,
// median 0.6%, worst 26%, tau 0.98, the best plan the engine's best; Mixtral 2,554 plans,
// median 0.8%, worst 36%, tau 0.96, the estimate's best plan 1.0% off the engine's best.
// With ZeRO-3's gather beside the blocking TP and EP collectives too (a gather-bound layer's
// period is the gather's, not the gather's plus the TP all-reduces): Llama 3 8B median 0.62%,
// worst 25.7%, tau 0.979; Mixtral median 0.65%, worst 37.7%, tau 0.960, both best plans the
// engine's best.
TEST(Analytic, PlanGridRanksAsTheEngine) {
  SearchSpaceOptions o;
  o.min_gpus = 8, o.max_gpus = 64, o.max_micro_batch = 2, o.max_cp = 2;
  const GridStats dense = compare_grid(llama8b(), o, 47);
  EXPECT_GT(dense.plans, 1400);
  EXPECT_LT(dense.median, 0.015);
  EXPECT_LT(dense.worst, 0.35);
  EXPECT_GT(dense.tau, 0.95);
  EXPECT_LT(dense.best_gap, 0.02);
  const Scenario moe = test::device_alone(R"(
model: mixtral-8x7b
cluster: dgx-h100
training: {seq_len: 4096, global_batch: 64, micro_batch: 1, precision: bf16}
plan: {tp: 1, pp: 1, dp: 1}
)");
  o.min_gpus = 16, o.max_gpus = 64;
  const GridStats m = compare_grid(moe, o, 83);
  // the MoE space varies EP and the experts' own TP (MoE parallel folding) as well: measured
  // 2026-12-06, 5,794 plans (2,554 before folding), median 0.61%, worst 38.6%, tau 0.960, the
  // estimate's best plan the engine's best
  std::printf("mixtral grid: %d plans, median %.4f, worst %.4f, tau %.4f, best gap %.4f\n", m.plans, m.median, m.worst,
              m.tau, m.best_gap);
  EXPECT_GT(m.plans, 2200);
  EXPECT_LT(m.median, 0.015);
  EXPECT_LT(m.worst, 0.5);
  EXPECT_GT(m.tau, 0.92);
  EXPECT_LT(m.best_gap, 0.06);
}

// The search's top plans for a fine-grained MoE (Qwen3-30B-A3B's shape, as the Megatron-Bridge
// judges run it: 128 experts of 768, top 8, so the dispatcher's token moves and the grouped
// GEMMs' per-expert floor weigh in), confirmed one by one with the engine as `twinsim search`
// confirms them. The space varies EP, the experts' own TP and their folding over TP x DP.
// Measured 2026-12-06, 16-32 H100s: 50,441 plans fit (26,498 folded); the best 25 (all EP 8, TP 1,
// PP 1-2, interleaved 2-8 chunks: the recipes' layout) median |est/engine - 1| 0.37%, worst 0.64%;
// the best 25 folded (TP > 1, experts' TP apart) median 0.20%, worst 0.27%; both best plans the
// engine's best among their 25.
TEST(Analytic, FineGrainedMoeTopPlansAgreeWithTheEngine) {
  const Scenario base = test::device_alone(R"(
model: {hf_config: qwen3-235b-a22b, layers: 48, hidden: 2048, heads: 32, kv_heads: 4, head_dim: 128,
        ffn_hidden: 6144, moe: {expert_ffn_hidden: 768}}
cluster: dgx-h100
training: {seq_len: 4096, global_batch: 256, micro_batch: 1, precision: bf16}
plan: {tp: 1, pp: 1, dp: 16}
)");
  const SearchSpace space = space_of(base, 16, 32, 1, 1);
  AnalyticModel model(base, space);
  std::vector<std::pair<double, Candidate>> fitting, fitting_folded;
  int folded = 0, expert_parallel = 0;
  for_each_candidate(space, [&](const Candidate& c) {
    const bool is_folded = c.tp > 1 && c.expert_tp > 0 && c.expert_tp != c.tp;
    folded += is_folded;
    expert_parallel += c.ep > 1;
    const AnalyticEstimate e = model.estimate(c);
    if (!e.fits) return;
    fitting.emplace_back(e.step_s, c);
    if (is_folded) fitting_folded.emplace_back(e.step_s, c);
  });
  EXPECT_GT(folded, 0);  // the space holds folded layouts (experts' TP apart from attention's)
  EXPECT_GT(expert_parallel, 0);
  // the best 25 plans, and the best 25 folded ones, each estimated and simulated
  const auto confirm = [&](std::vector<std::pair<double, Candidate>>& plans, const char* what) {
    ASSERT_GE(plans.size(), 25u) << what;
    std::sort(plans.begin(), plans.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<double> sim, err;
    int with_ep = 0;
    for (std::size_t i = 0; i < 25; ++i) {
      with_ep += plans[i].second.ep > 1;
      sim.push_back(predict_training(candidate_scenario(base, plans[i].second)).step_s);
      err.push_back(std::abs(plans[i].first / sim.back() - 1));
    }
    std::sort(err.begin(), err.end());
    const double best_gap = sim[0] / *std::min_element(sim.begin(), sim.end()) - 1;
    std::printf("qwen3-30b-a3b, best 25 %s plans of %zu (%d with EP): median %.4f, worst %.4f, best gap %.4f\n", what,
                plans.size(), with_ep, err[err.size() / 2], err.back(), best_gap);
    EXPECT_LT(err[err.size() / 2], 0.03) << what;
    EXPECT_LT(err.back(), 0.15) << what;
    EXPECT_LT(best_gap, 0.05) << what;
  };
  confirm(fitting, "fitting");
  confirm(fitting_folded, "folded");
}

// ZeRO-Infinity's NVMe tier (plan.offload_device: nvme) over the plans the search keeps it
// on (ZeRO-3 with the optimizer offloaded; the others move to CPU memory or none): the swap
// and the parameter reads are one formula for both (sim/cost/offload_io), so the two
// still rank alike. Llama 3 8B on one or two Azure ND H200 v5, parameters offloaded too.
// Measured 2026-11-26 (every 29th plan, both tiers tried): 1,811 plans, median
// |est/engine - 1| 0.26%, worst 7.4%, tau 0.991, the estimate's best plan the engine's best.
TEST(Analytic, NvmeOffloadPlansRankAsTheEngine) {
  const Scenario base = test::device_alone(R"(
model: llama3-8b
cluster: azure-nd-h200-v5
training: {seq_len: 4096, global_batch: 32, micro_batch: 1, precision: bf16}
plan: {tp: 1, pp: 1, dp: 8, zero: 3, offload_optimizer: true, offload_params: true, offload_device: nvme}
)");
  SearchSpaceOptions o;
  o.min_gpus = 8, o.max_gpus = 16, o.max_micro_batch = 2, o.max_cp = 2, o.consider_offload = true;
  const GridStats g = compare_grid(base, o, 29);
  std::printf("nvme grid: %d plans, median %.4f, worst %.4f, tau %.4f, best gap %.4f\n", g.plans, g.median, g.worst,
              g.tau, g.best_gap);  // the figures above
  EXPECT_GT(g.plans, 1700);
  int on_drives = 0;  // the share of the space that swaps through the drives
  for_each_candidate(make_search_space(base, o), [&](const Candidate& c) { on_drives += c.offload_device == OffloadDevice::nvme; });
  EXPECT_GT(on_drives, 5000);
  EXPECT_LT(g.median, 0.015);
  EXPECT_GT(g.tau, 0.95);
  EXPECT_LT(g.best_gap, 0.02);
}

// A straggler (cluster.straggler) is priced alike by the engine and the estimate: every
// blocking collective waits for the slowest member, behind by the straggler share of the
// compute since the last one (sim/cost/straggler_wait.hpp). Llama 3 8B at a 10% straggler,
// the step's growth over none: TP 8 (blocking, or overlapped with its waited part), where
// the layers' collectives carry the waits; TP 1 under PP, where only the data-parallel reduce
// after the backward does (every micro-batch's compute: 10% of the compute); and none at all
// where that reduce overlaps the backward and nothing else blocks.
TEST(Analytic, StragglerPricedLikeTheEventEngine) {
  auto with = [](double straggler) {
    Scenario s = llama8b();
    s.cluster.straggler = straggler;
    return s;
  };
  auto plan = [](int tp, int pp, int dp, bool tp_overlap, bool grad_overlap) {
    Candidate c;
    c.tp = tp, c.pp = pp, c.dp = dp, c.cp = 1, c.micro_batch = 1, c.zero = 1, c.recompute = Recompute::selective;
    c.schedule = Schedule::one_f_one_b, c.virtual_stages = 1, c.sequence_parallel = tp > 1;
    c.tp_comm_overlap = tp_overlap, c.overlap_grad_reduce = grad_overlap;
    return c;
  };
  const Candidate plans[] = {plan(8, 1, 8, false, true), plan(8, 2, 4, true, true), plan(1, 4, 16, false, false),
                             plan(1, 1, 64, false, true)};
  SearchSpaceOptions o;
  o.min_gpus = 64, o.max_gpus = 64, o.max_micro_batch = 1, o.max_cp = 1;
  double grew[4][2], step[4];  // [plan][estimate, engine]; the engine's step without a straggler
  for (int k = 0; k < 4; ++k) {
    double est[2], sim[2];
    for (int w = 0; w < 2; ++w) {
      const Scenario base = with(w == 0 ? 0.0 : 0.1);
      AnalyticModel model(base, make_search_space(base, o));
      est[w] = model.estimate(plans[k]).step_s;
      sim[w] = predict_training(candidate_scenario(base, plans[k])).step_s;
    }
    grew[k][0] = est[1] - est[0], grew[k][1] = sim[1] - sim[0], step[k] = sim[0];
    std::printf("%s: straggler 0.1 adds %.4f s to the estimate, %.4f s to the engine's step (of %.3f s)\n",
                describe(plans[k]).c_str(), grew[k][0], grew[k][1], sim[0]);
  }
  for (int k = 0; k < 3; ++k) {
    // the compute is most of the step (the rest: bubble, DP reduce): a 10% straggler adds over 3%
    EXPECT_GT(grew[k][1], 0.03 * step[k]) << describe(plans[k]);
    EXPECT_NEAR(grew[k][0] / grew[k][1], 1.0, 0.10) << describe(plans[k]);
  }
  // the DP-only plan whose reduce overlaps: no blocking collective, no wait in either
  EXPECT_EQ(grew[3][1], 0.0);
  EXPECT_EQ(grew[3][0], 0.0);
}

}  // namespace
}  // namespace twinsim
