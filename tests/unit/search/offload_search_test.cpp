// The search with ZeRO-Offload in its space: Llama 3 8B fully fine-tuned on one H100 fits
// only with the optimizer states in CPU memory, and the estimate agrees with the engine.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "scenario/load.hpp"
#include "tests/unit/scenario/words.hpp"
#include "sim/memory/memory_report.hpp"
#include "sim/search/analytic.hpp"
#include "sim/search/candidate.hpp"
#include "sim/training/training_report.hpp"
#include "sim/search/plan_search.hpp"

namespace twinsim {
namespace {

Scenario one_h100() {
  return load_scenario_text(R"(
model: llama3-8b
cluster: dgx-h100
training: {seq_len: 4096, global_batch: 16, micro_batch: 1, precision: bf16}
plan: {tp: 1, pp: 1, dp: 1}
)");
}

TEST(OffloadSearch, OnlyOffloadedPlansFitOneGpu) {
  SearchOptions o;
  o.space.min_gpus = o.space.max_gpus = 1;
  o.top = 3;
  // bf16 weights and grads (4 B/param) and Adam's 12 B/param: 120 GiB of 80
  const SearchResult without = search_plans(one_h100(), o);
  EXPECT_EQ(without.fitting, 0);
  o.space.consider_offload = true;
  const SearchResult with = search_plans(one_h100(), o);
  std::int64_t activation_offload = 0;  // one-stage plans without recompute, offloading activations too
  for_each_candidate(make_search_space(one_h100(), o.space),
                     [&](const Candidate& c) { activation_offload += c.offload_activations_layers > 0 ? 1 : 0; });
  EXPECT_GT(activation_offload, 0);
  EXPECT_EQ(with.candidates, 2 * without.candidates + activation_offload);  // every plan, with and without
  EXPECT_GT(with.fitting, 0);
  ASSERT_FALSE(with.top.empty());
  for (const SearchEntry& e : with.top) {
    EXPECT_TRUE(e.plan.offload_optimizer);
    EXPECT_EQ(e.plan.schedule, Schedule::one_f_one_b);  // one stage: one micro-batch's activations
    ASSERT_TRUE(e.simulated);
    EXPECT_NEAR(e.analytic.step_s, e.simulated_step_s, 0.02 * e.simulated_step_s);  // one optimizer formula
  }
}

// A scenario offloading ZeRO-3's parameters too (plan.offload_params): the search keeps it on
// its ZeRO-3 plans that offload the optimizer with per-layer gathers, and nowhere else; on
// those the estimate's memory is the memory model's, its step within -3% / +8% of the
// engine's (measured on every 13th such plan, 47 of them: 0.993 to 1.044), and each plan's
// overrides load back as the plan has them.
TEST(OffloadSearch, ParameterOffloadStaysWithZeroThreeOffloadedPlans) {
  const char* text = R"(
model: llama3-70b
cluster: dgx-h100
training: {seq_len: 4096, global_batch: 32, micro_batch: 1, precision: bf16}
plan: {tp: 1, pp: 1, dp: 8, zero: 3, recompute: full, offload_optimizer: true, offload_params: true}
)";
  const Scenario base = load_scenario_text(text);
  SearchSpaceOptions o;
  o.min_gpus = o.max_gpus = 8;
  o.max_micro_batch = 1;
  o.consider_offload = true;
  const SearchSpace space = make_search_space(base, o);
  AnalyticModel model(base, space);
  int offloaded = 0, n = 0;
  for_each_candidate(space, [&](const Candidate& c) {
    const bool expected = c.shards_params() && c.dp_group_size() > 1 && c.offload_optimizer && c.overlap_grad_reduce;
    EXPECT_EQ(c.offload_params, expected) << describe(c);
    if (!c.offload_params || n++ % 13 != 0) return;
    ++offloaded;
    const Scenario s = load_scenario_text(text, test::words(to_overrides(c, base.plan)));
    EXPECT_TRUE(s.plan.offload_params) << describe(c);
    const AnalyticEstimate e = model.estimate(c);
    EXPECT_EQ(e.peak_bytes, predict_memory(s).peak_bytes) << describe(c);
    const double engine = predict_training(s).step_s;
    EXPECT_GT(e.step_s, 0.97 * engine) << describe(c);
    EXPECT_LT(e.step_s, 1.08 * engine) << describe(c);
  });
  EXPECT_GT(offloaded, 5);
}

// Where the node describes its NVMe drives, `--offload` tries each ZeRO-3 plan that offloads
// on both tiers: Llama-3.1-405B on one Azure ND H200 v5 with its parameters offloaded needs
// 661 GiB of host per GPU against a 215 GiB share, so only the drives' plans fit, and the
// search finds them though the scenario asked for CPU memory. Without drives (a DGX H200,
// the same GPUs) the space is the CPU tier's alone.
TEST(OffloadSearch, TheDrivesHoldWhatCpuMemoryCannot) {
  const char* text = R"(
model: llama3-405b
cluster: azure-nd-h200-v5
training: {seq_len: 4096, global_batch: 32, micro_batch: 1, precision: bf16}
plan: {tp: 1, pp: 1, dp: 8, zero: 3, recompute: full, offload_optimizer: true, offload_params: true}
)";
  SearchOptions o;
  o.space.min_gpus = o.space.max_gpus = 8;
  o.space.max_micro_batch = 1;
  o.space.consider_offload = true;
  o.top = 3;
  const SearchResult with_drives = search_plans(load_scenario_text(text), o);
  ASSERT_FALSE(with_drives.top.empty());
  for (const SearchEntry& e : with_drives.top) EXPECT_EQ(e.plan.offload_device, OffloadDevice::nvme) << describe(e.plan);
  const SearchResult without = search_plans(load_scenario_text(text, {"cluster=dgx-h200"}), o);
  EXPECT_EQ(without.fitting, 0);
  std::int64_t zero3_offloaded = 0;  // the plans tried a second time, on the drives
  for_each_candidate(make_search_space(load_scenario_text(text), o.space),
                     [&](const Candidate& c) { zero3_offloaded += c.offload_device == OffloadDevice::nvme; });
  EXPECT_GT(zero3_offloaded, 0);
  EXPECT_EQ(with_drives.candidates, without.candidates + zero3_offloaded);
}

}  // namespace
}  // namespace twinsim
