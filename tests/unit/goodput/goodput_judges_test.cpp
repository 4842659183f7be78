// Published large runs judge the goodput model (sim/goodput/README.md, "Judges"). The
// failure rates come from one run's component counts (Llama 3, Table 5) or one cluster's
// measured rate (Meta's RSC-1); nothing here is fitted to the runs it is compared with.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <utility>

#include "hardware/failure_rates.hpp"
#include "scenario/load.hpp"
#include "sim/goodput/goodput.hpp"
#include "sim/training/training_report.hpp"

namespace twinsim {
namespace {

// Llama 3 405B on 16,384 H100s as the catalog scenario describes Meta's setup, with the
// Llama 3 failure rates and Tectonic's 2 TB/s (the default storage share times 16,384 GPUs).
GoodputReport llama3_54_days(const std::vector<std::string>& extra) {
  std::vector<std::string> sets{"goodput.failures=llama3-h100"};
  sets.insert(sets.end(), extra.begin(), extra.end());
  const Scenario s =
      load_scenario_file(std::string(TWINSIM_SOURCE_DIR) + "/scenarios/training/llama3-405b-h100.yaml", sets);
  const double step_s = predict_training(s).step_s;
  return predict_goodput(s, *s.goodput, step_s);
}

TEST(GoodputJudges, Llama3InterruptionsAndEffectiveTrainingTime) {
  const GoodputReport async = llama3_54_days({});
  // the count: Table 5's own, given back through the rates (a units check, not a judge)
  const double interruptions = (async.interruptions_per_day + async.planned_per_day) * 54;
  std::printf("Llama 3 405B, 54 days: %.1f interruptions (published 466); checkpoint %.3g TB, write %.2f s, "
              "interval %.1f min\n",
              interruptions, async.checkpoint.bytes / 1e12, async.checkpoint.write_s,
              async.prediction.interval_s / 60);
  EXPECT_NEAR(interruptions, 466, 0.10 * 466);
  EXPECT_DOUBLE_EQ(async.storage_write_Bps, 2e12);
  // the effective training time: published "higher than 90%"; within 10% of it means up to 99%
  const GoodputReport sync = llama3_54_days({"goodput.async_checkpoint=false"});
  for (const GoodputReport* r : {&async, &sync}) {
    std::printf("  %s: ETTR %.1f%% (checkpoints %.2f%%, lost work %.2f%%, recovery %.2f%%)\n",
                r->inputs.async_checkpoint ? "async" : "sync", 100 * r->prediction.ettr,
                100 * r->prediction.checkpoint_share, 100 * r->prediction.lost_work_share,
                100 * r->prediction.recovery_share);
    EXPECT_GT(r->prediction.ettr, 0.90);
    EXPECT_LT(r->prediction.ettr, 0.99);
  }
  // the restart dominates: at 20 minutes a restart the run falls below 90%
  EXPECT_LT(llama3_54_days({"goodput.restart_minutes=20"}).prediction.ettr, 0.90);
}

// Hardware interruptions expected from the Llama 3 set's hardware components (GPU, host,
// network; not software) on `gpus` GPUs in `nodes` nodes over `hours`.
double hardware_interruptions(std::int64_t gpus, std::int64_t nodes, double hours, bool gpu_parts_only) {
  FailureRates hardware = *published_failure_rates("llama3-h100");
  std::erase_if(hardware.components, [&](const ComponentFailureRate& c) {
    return c.scope == FailureScope::job || (gpu_parts_only && c.scope != FailureScope::gpu);
  });
  return interruptions_per_hour(hardware, gpus, nodes) * hours;
}

TEST(GoodputJudges, OlderA100RunsFailMoreOftenThanLlama3sH100Rates) {
  // OPT-175B (Zhang et al. 2022, §2.5): 992 A100s (124 nodes) over 2 months, hardware failures
  // caused at least 35 manual restarts and an estimated 70+ automatic ones: >= 105.
  const double opt = hardware_interruptions(992, 124, 60 * 24, false);
  // BLOOM-176B (BigScience, tr11 README / ml-engineering): "a new cluster with about 400
  // GPUs", 384 training, "on average 1-2 GPU failures a week".
  const double bloom = hardware_interruptions(384, 48, 7 * 24, true);
  std::printf("OPT-175B: %.1f hardware interruptions predicted, >= 105 published (%.2fx)\n", opt, opt / 105);
  std::printf("BLOOM-176B: %.2f GPU failures a week predicted, 1-2 published (%.2fx of 1.5)\n", bloom, bloom / 1.5);
  // the documented miss (README, "Judges"): the H100-era rates under-predict both A100 runs,
  // OPT by 4x, BLOOM by 2x; these bands keep the README's numbers true
  EXPECT_GT(opt / 105, 0.15);
  EXPECT_LT(opt / 105, 0.30);
  EXPECT_GT(bloom / 1.5, 0.45);
  EXPECT_LT(bloom / 1.5, 0.65);
  // RSC-1's A100 node failure rate (the set `rsc1-a100`) halves OPT's miss but does not
  // close it: 48 against >= 105
  const double opt_rsc1 = interruptions_per_hour(*published_failure_rates("rsc1-a100"), 992, 124) * 60 * 24;
  std::printf("OPT-175B at RSC-1's rate: %.1f interruptions predicted, >= 105 published (%.2fx)\n", opt_rsc1,
              opt_rsc1 / 105);
  EXPECT_GT(opt_rsc1 / 105, 0.40);
  EXPECT_LT(opt_rsc1 / 105, 0.55);
}

// Meta's RSC-1 (Kokolis et al., "Revisiting Reliability in Large-Scale Machine Learning Research
// Clusters", HPCA 2025, arXiv 2410.21680v2): from the cluster's measured rate, 6.50 failures per
// 1,000 node-days (the `rsc1-a100` set), the paper gives a job's mean time to failure by its
// size: 1.8 h at 16,384 GPUs and 0.23 h at 131,072. The scenario's DGX A100 nodes (8 GPUs)
// turn GPUs into nodes; the goodput report's MTBF is the prediction.
double rsc1_mtbf_hours(std::int64_t gpus, const std::string& failures = "goodput.failures=rsc1-a100") {
  const std::string dp = std::to_string(gpus);
  const Scenario s = load_scenario_file(
      std::string(TWINSIM_SOURCE_DIR) + "/scenarios/training/llama2-7b-zeropp-1536xa100.yaml",
      {failures, "plan.dp=" + dp, "training.global_batch=" + dp, "cluster.nodes=" + std::to_string(gpus / 8)});
  const GoodputReport g = predict_goodput(s, *s.goodput, 1.0);  // the MTBF does not depend on the step
  EXPECT_EQ(g.nodes * 8, gpus);
  return g.prediction.mtbf_s / 3600;
}

TEST(GoodputJudges, Rsc1MeanTimeToFailureByJobSize) {
  const std::array<std::pair<std::int64_t, double>, 2> published{{{16384, 1.8}, {131072, 0.23}}};
  for (const auto& [gpus, hours] : published) {
    const double predicted = rsc1_mtbf_hours(gpus);
    std::printf("RSC-1, %lld GPUs: MTTF %.3f h predicted, %.2f h published\n", static_cast<long long>(gpus),
                predicted, hours);
    EXPECT_NEAR(predicted, hours, 0.15 * hours);
  }
  // the jobs' own MTTFs (README, "Judges"): 47.7 days at 8 GPUs and 7.9 h at 1,024, both 3.2-3.6x
  // shorter than the node failure rate r_f gives (153.8 days, 28.8 h): a job stops for more than
  // the node failures r_f counts. The bands keep the README's numbers true.
  const double one_node = rsc1_mtbf_hours(8), small = rsc1_mtbf_hours(1024);
  std::printf("RSC-1 rate: 8 GPUs %.1f days (47.7 published, %.2fx), 1024 GPUs %.1f h (7.9 published, %.2fx)\n",
              one_node / 24, one_node / 24 / 47.7, small, small / 7.9);
  EXPECT_GT(small / 7.9, 3.0);
  EXPECT_LT(small / 7.9, 4.0);
  EXPECT_GT(one_node / 24 / 47.7, 3.0);
  EXPECT_LT(one_node / 24 / 47.7, 3.5);
  // ... but from the single-node jobs' MTTF as the rate (every cause, per node: 1e6 / (47.7 x 24)
  // per million node-hours), the series model predicts the 128-node jobs' 7.9 h within 15%
  const double per_node = 1e6 / (47.7 * 24);
  const double from_one_node =
      rsc1_mtbf_hours(1024, "goodput.failures.node_per_million_hours.job_failure=" + std::to_string(per_node));
  std::printf("RSC-1 jobs: 1024 GPUs from the 8-GPU jobs' rate: %.2f h predicted, 7.9 h published\n", from_one_node);
  EXPECT_NEAR(from_one_node, 7.9, 0.15 * 7.9);
}

TEST(GoodputJudges, BloomLosesHalfAnIntervalPerCrash) {
  // BLOOM saved a checkpoint every 3 h (100 iterations) and "on average we would lose 1.5h of
  // training on hardware crash": the lost-work term of a synchronous checkpoint
  GoodputInputs in;
  in.failure_rate_per_s = 1.5 / (7 * 86400);
  in.async_checkpoint = false;
  in.checkpoint_blocking_s = in.checkpoint_write_s = 60;  // a minute's stall, small beside 3 h
  in.interval_s = 3 * 3600;
  in.step_s = 108;  // 100 iterations in 3 h
  const GoodputPrediction g = predict_goodput(in);
  EXPECT_EQ(g.interval_steps, 100);
  EXPECT_NEAR(g.lost_work_s / 3600, 1.5, 0.15 * 1.5);
}

}  // namespace
}  // namespace twinsim
