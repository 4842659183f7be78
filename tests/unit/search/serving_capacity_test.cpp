// `capacity --serve` as a library call (sim/search/serving_capacity): a loose target is met
// by one GPU; an impossible one by nothing, after trying every TP with replicas up to the
// cap; a target between picks the smallest GPU count it saw meet it.
#include <gtest/gtest.h>

#include "scenario/errors.hpp"
#include "scenario/load.hpp"
#include "sim/search/serving_capacity.hpp"

namespace twinsim {
namespace {

ServingCapacityRequest llama3_8b_h100(double rate, double ttft_p99_s) {
  ServingCapacityRequest r;
  r.model = "llama3-8b", r.gpu = "h100-sxm";
  r.model_spec = catalog_model(r.model), r.node = catalog_cluster_for_gpu(r.gpu);
  r.rate_per_s = rate, r.ttft_p99_s = ttft_p99_s;
  r.requests = 60, r.max_replicas = 4;
  return r;
}

TEST(ServingCapacity, ALooseTargetIsMetByOneGpu) {
  const ServingCapacityPlan p = plan_serving_capacity(llama3_8b_h100(1, 10));
  ASSERT_TRUE(p.best.has_value());
  EXPECT_EQ(p.best->gpus(), 1);
  EXPECT_EQ(p.tried.size(), 1u);  // tp 1 x 1 met it; every larger deployment was skipped
  EXPECT_EQ(p.node_type, "dgx-h100");
  EXPECT_EQ(p.stack, "vllm-v1");  // a bf16 model's serving engine when none is named (scenario/default_stack)
}

TEST(ServingCapacity, AnImpossibleTargetTriesEveryTpUpToTheReplicaCap) {
  const ServingCapacityPlan p = plan_serving_capacity(llama3_8b_h100(1, 1e-6));
  EXPECT_FALSE(p.best.has_value());
  EXPECT_EQ(p.tried.size(), 4u * 4u);  // tp 1, 2, 4, 8 (llama3-8b splits over each) x 1..4 replicas
}

TEST(ServingCapacity, TheSmallestDeploymentThatMeetsTheTargetWins) {
  // between the best and the worst p99 seen for an impossible target: met by some
  // deployment, and the answer is the smallest GPU count among those that met it
  const ServingCapacityPlan all = plan_serving_capacity(llama3_8b_h100(40, 1e-6));
  double lo = 1e9, hi = 0;
  for (const ServingDeployment& d : all.tried) lo = std::min(lo, d.ttft_p99_s), hi = std::max(hi, d.ttft_p99_s);
  ASSERT_LT(lo, hi);
  const double target = (lo + hi) / 2;
  const ServingCapacityPlan p = plan_serving_capacity(llama3_8b_h100(40, target));
  ASSERT_TRUE(p.best.has_value());
  EXPECT_LE(p.best->ttft_p99_s, target);
  for (const ServingDeployment& d : all.tried)
    if (d.ttft_p99_s <= target) { EXPECT_GE(d.gpus(), p.best->gpus()) << "tp" << d.tp << " x " << d.replicas; }
}

TEST(ServingCapacity, ATpotTargetIsMetToo) {
  const ServingCapacityPlan ttft_only = plan_serving_capacity(llama3_8b_h100(8, 10));
  ServingCapacityRequest r = llama3_8b_h100(8, 10);
  r.tpot_p99_s = 0.9 * ttft_only.best->tpot_p99_s;  // tighter than what the TTFT-only answer gives
  const ServingCapacityPlan p = plan_serving_capacity(r);
  ASSERT_TRUE(p.best.has_value());
  EXPECT_LE(p.best->tpot_p99_s, r.tpot_p99_s);
  EXPECT_LE(p.best->ttft_p99_s, r.ttft_p99_s);
  EXPECT_GT(p.best->gpus(), ttft_only.best->gpus());
}

TEST(ServingCapacity, DisaggregatedDeploymentsCompeteAndGrowTheFailingPool) {
  ServingCapacityRequest r = llama3_8b_h100(20, 1e-6);  // impossible: every candidate is tried
  r.max_replicas = 2;
  r.disaggregate = true;
  const ServingCapacityPlan p = plan_serving_capacity(r);
  EXPECT_FALSE(p.best.has_value());
  int disaggregated = 0;
  for (std::size_t i = 0; i < p.tried.size(); ++i) {
    const ServingDeployment& d = p.tried[i];
    if (!d.disaggregated) continue;
    ++disaggregated;
    EXPECT_EQ(d.gpus(), d.prefill_tp * d.prefill_replicas + d.tp * d.replicas);
    // the TTFT failed: the next try of the same TPs has one more prefill replica
    if (i + 1 < p.tried.size() && p.tried[i + 1].disaggregated && p.tried[i + 1].tp == d.tp &&
        p.tried[i + 1].prefill_tp == d.prefill_tp) {
      EXPECT_EQ(p.tried[i + 1].prefill_replicas, d.prefill_replicas + 1);
      EXPECT_EQ(p.tried[i + 1].replicas, d.replicas);
    }
  }
  EXPECT_EQ(disaggregated, 4 * 4 * 2);  // prefill TP x decode TP (1..8) x prefill replicas 1..2
  // a target between: the answer is no larger than the colocated-only one
  r.ttft_p99_s = 0.5, r.tpot_p99_s = 0.05;
  const ServingCapacityPlan both = plan_serving_capacity(r);
  r.disaggregate = false;
  const ServingCapacityPlan colocated = plan_serving_capacity(r);
  ASSERT_TRUE(both.best.has_value());
  if (colocated.best) { EXPECT_LE(both.best->gpus(), colocated.best->gpus()); }
}

TEST(ServingCapacity, APrefixCacheShortensThePrefillsItSizesFor) {
  // 4K prompts at 8 requests/s against a 0.3 s TTFT: 3K of each prompt cached for 90% of them
  ServingCapacityRequest r = llama3_8b_h100(8, 0.3);
  r.prompt_len = 4096, r.output_len = 32;
  const ServingCapacityPlan cold = plan_serving_capacity(r);
  r.prefix_tokens = 3072, r.prefix_hit_rate = 0.9;
  const ServingCapacityPlan warm = plan_serving_capacity(r);
  ASSERT_TRUE(cold.best && warm.best);
  EXPECT_LT(warm.best->gpus(), cold.best->gpus());
}

TEST(ServingCapacity, SpeculationMeetsATpotPlainDecodingCannot) {
  ServingCapacityRequest r = llama3_8b_h100(1, 10);
  r.tpot_p99_s = 1e-9;  // nothing meets it: every deployment is tried, its TPOT recorded
  const ServingCapacityPlan plain = plan_serving_capacity(r);
  double fastest = 1e9;
  for (const ServingDeployment& d : plain.tried) fastest = std::min(fastest, d.tpot_p99_s);
  r.tpot_p99_s = 0.8 * fastest;  // beyond every plain deployment
  EXPECT_FALSE(plan_serving_capacity(r).best.has_value());
  // an n-gram proposer (no draft passes) accepted 80% of the time: 3.36 tokens a step
  r.speculative = speculative_from_text("{method: ngram, tokens: 4, acceptance_rate: 0.8}", "--speculative");
  const ServingCapacityPlan spec = plan_serving_capacity(r);
  ASSERT_TRUE(spec.best.has_value());
  EXPECT_LE(spec.best->tpot_p99_s, r.tpot_p99_s);
}

TEST(ServingCapacity, ANonPositiveRateOrTargetIsRefused) {
  EXPECT_THROW(plan_serving_capacity(llama3_8b_h100(0, 1)), ScenarioError);
  EXPECT_THROW(plan_serving_capacity(llama3_8b_h100(1, 0)), ScenarioError);
}

}  // namespace
}  // namespace twinsim
