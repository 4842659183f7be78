// Activation offload (plan.offload_activations_layers, sim/training/activation_offload.hpp):
// where its bytes go, what its copies cost the step in the event engine and in the search's
// estimate, and the plans it is refused or kept on.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "scenario/load.hpp"
#include "tests/unit/scenario/words.hpp"
#include "sim/memory/activations.hpp"
#include "sim/memory/memory_report.hpp"
#include "sim/search/analytic.hpp"
#include "sim/search/candidate.hpp"
#include "sim/search/search_space.hpp"
#include "sim/training/activation_offload.hpp"
#include "sim/training/layer_costs.hpp"
#include "sim/training/training_report.hpp"
#include "tests/unit/scenario/expect_refused.hpp"

namespace twinsim {
namespace {

// 8 Llama-style layers on one H100 of a DGX whose PCIe link is made slow (2 GB/s out, 1 GB/s
// in) so that every copy outlasts the pass beside it.
const char* kScenario = R"(
model: {layers: 8, hidden: 1024, heads: 8, kv_heads: 8, ffn_hidden: 2816, vocab: 32000,
        activation: swiglu, norm: rmsnorm, position: rope, bias: false, tied_embeddings: false}
cluster: {preset: dgx-h100, gpus_per_node: 1, nodes: 1,
          host: {h2d_GBps: 1, d2h_GBps: 2, memory_bandwidth_GBps: 100, memory_GiB: 1024}}
training: {seq_len: 2048, global_batch: 2, micro_batch: 1, precision: bf16}
plan: {tp: 1, pp: 1, dp: 1}
)";

Scenario scenario(const std::vector<std::string>& sets) { return load_scenario_text(kScenario, sets); }

LayerActivations kept_per_layer(const Scenario& s) {
  const TrainingWorkload& t = *s.training;
  return layer_activations(s.model, s.plan, {t.micro_batch, t.seq_len, activation_dtype(t.precision)});
}

TEST(ActivationOffload, TheOffloadedLayersKeepTheirActivationsInCpuMemory) {
  const Scenario none = scenario({}), three = scenario({"plan.offload_activations_layers=3"});
  const std::int64_t layer = kept_per_layer(none).dense;
  ASSERT_GT(layer, 0);
  const MemoryReport a = predict_memory(none), b = predict_memory(three);
  EXPECT_EQ(b.host_bytes - a.host_bytes, 3 * layer);
  // of 8 layers, 5 stay: every offload was waited for by the forward (layer i + 2 waits for
  // layer i's), so the GPU holds the 5 at the forward's end: three layers' worth less
  EXPECT_EQ(a.breakdown.activations - b.breakdown.activations, 3 * layer);
  // 7 offloaded, one stays: the last copy is still in flight as the forward ends (nothing
  // after its next layer waits for it), two layers' worth on the GPU
  const MemoryReport c = predict_memory(scenario({"plan.offload_activations_layers=7"}));
  EXPECT_EQ(a.breakdown.activations - c.breakdown.activations, 6 * layer);
}

TEST(ActivationOffload, CopiesLongerThanTheirPassesStallTheStepByTheirExcess) {
  // each of the 2 micro-batches: offloads 0..5 are waited for by layers 2..7 (the forward's
  // period is the copy's); reloads 5..0 each set the backward's period (each starts with the
  // next layer's backward). Exposed: 2 x (6 (out - fwd) + 6 (in - bwd)).
  const Scenario s = scenario({"plan.offload_activations_layers=6"});
  const LayerCost layer = cost_layer(s, 0);
  const double fwd = layer.fwd_s(TimeCategory::compute), bwd = layer.bwd_s(TimeCategory::compute);
  const ActivationTransfer x = activation_transfer(s.cluster, kept_per_layer(s).dense);
  ASSERT_GT(x.offload_s, fwd);
  ASSERT_GT(x.reload_s, bwd);
  EXPECT_NEAR(x.offload_s, kept_per_layer(s).dense / 2e9, 1e-12);
  const double exposed = 2 * (6 * (x.offload_s - fwd) + 6 * (x.reload_s - bwd));
  const TrainingPrediction with = predict_training(s), without = predict_training(scenario({}));
  EXPECT_NEAR(with.breakdown.offload_exposed_s, exposed, 1e-9 * exposed);
  EXPECT_NEAR(with.step_s - without.step_s, exposed, 1e-6 * exposed);
  EXPECT_DOUBLE_EQ(without.breakdown.offload_exposed_s, 0);
  // a link fast enough that every copy is shorter than its pass: nothing exposed
  const Scenario fast = load_scenario_text(kScenario, {"plan.offload_activations_layers=6", "cluster.host.h2d_GBps=5000",
                                                       "cluster.host.d2h_GBps=5000"});
  EXPECT_LT(predict_training(fast).breakdown.offload_exposed_s, 1e-9);
  EXPECT_NEAR(predict_training(fast).step_s, without.step_s, 1e-9 * without.step_s);
}

TEST(ActivationOffload, FullModeAndTheEstimateAgreeWithTheEngine) {
  const std::vector<std::string> base = {"plan.offload_activations_layers=6", "cluster.gpus_per_node=2", "plan.dp=2",
                                         "training.global_batch=4"};
  const Scenario s = scenario(base);
  const double fast = predict_training(s).step_s;
  EXPECT_NEAR(predict_training(s, "", Fidelity::full).step_s, fast, 1e-9 * fast);
  SearchSpaceOptions o;
  o.min_gpus = o.max_gpus = 2;
  o.max_micro_batch = 1;
  const SearchSpace space = make_search_space(s, o);
  AnalyticModel model(s, space);
  int kept = 0;
  for_each_candidate(space, [&](const Candidate& c) {
    // kept only where Megatron-core allows it: one stage, no recomputation
    EXPECT_EQ(c.offload_activations_layers, c.pp == 1 && c.recompute == Recompute::none ? 6 : 0) << describe(c);
    if (c.offload_activations_layers == 0) return;
    ++kept;
    const Scenario plan = candidate_scenario(s, c);
    const AnalyticEstimate e = model.estimate(c);
    EXPECT_EQ(e.peak_bytes, predict_memory(plan).peak_bytes) << describe(c);
    const double engine = predict_training(plan).step_s;
    EXPECT_NEAR(e.step_s / engine, 1.0, 0.03) << describe(c);
  });
  EXPECT_GT(kept, 0);
}

// `twinsim search --offload` tries, besides the scenario's N, every layer's activations but
// the last's offloaded on its one-stage plans without recomputation: each such plan
// validates, and its estimate stays near the engine's.
TEST(ActivationOffload, SearchWithOffloadTriesItWhereItApplies) {
  const std::vector<std::string> base = {"cluster.gpus_per_node=2", "plan.dp=2", "training.global_batch=4"};
  const Scenario s = scenario(base);
  SearchSpaceOptions o;
  o.min_gpus = o.max_gpus = 2;
  o.max_micro_batch = 2;
  o.consider_offload = true;
  const SearchSpace space = make_search_space(s, o);
  AnalyticModel model(s, space);
  int offloading = 0;
  for_each_candidate(space, [&](const Candidate& c) {
    if (c.offload_activations_layers == 0) return;
    ++offloading;
    EXPECT_EQ(c.offload_activations_layers, 7) << describe(c);
    EXPECT_TRUE(c.pp == 1 && c.recompute == Recompute::none) << describe(c);
    EXPECT_NE(describe(c).find("act-offload=7"), std::string::npos) << describe(c);
    const Scenario plan = candidate_scenario(s, c);  // validates
    EXPECT_NEAR(model.estimate(c).step_s / predict_training(plan).step_s, 1.0, 0.03) << describe(c);
  });
  EXPECT_GT(offloading, 4);
}

TEST(ActivationOffload, RefusedWhereMegatronCoreRefusesIt) {
  const auto build = [](const std::string& sets) { return scenario(test::words(sets)); };
  test::expect_refused(build, {
      {"plan.offload_activations_layers=8", "plan.offload_activations_layers=8 must be less than model.layers=8"},
      {"plan.offload_activations_layers=2 plan.pp=2 cluster.gpus_per_node=2",
       "plan.offload_activations_layers=2 needs plan.pp: 1"},
      {"plan.offload_activations_layers=2 plan.recompute=full",
       "plan.offload_activations_layers=2 needs plan.recompute: none"},
      {"plan.offload_activations_layers=2 plan.schedule=gpipe",
       "plan.offload_activations_layers=2 needs plan.schedule: 1f1b"},
  });
}

}  // namespace
}  // namespace twinsim
