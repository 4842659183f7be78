// A searched plan's printed forms, all walked from the plan's knob table
// (models/plan_fields.hpp): its `--set` overrides load back into the very plan, its short
// form tells plans apart, and the CSV keeps the columns docs/SCENARIO.md promises.
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "scenario/load.hpp"
#include "tests/unit/scenario/words.hpp"
#include "sim/search/search_space.hpp"
#include "sim/search/search_text.hpp"

namespace twinsim {
namespace {

// 12 layers on 8-GPU nodes; the scenario carries ZeRO++ (qwZ, qgZ, hpZ over 2 GPUs), which
// a searched plan keeps only with ZeRO-3's per-layer gathers, and uneven stage layers,
// which no searched plan keeps.
const char* kScenario = R"(
model: {layers: 12, hidden: 512, heads: 8, kv_heads: 4, ffn_hidden: 1536, vocab: 1000,
        activation: swiglu, norm: rmsnorm, position: rope, bias: false, tied_embeddings: false}
cluster: dgx-h100
training: {seq_len: 512, global_batch: 16, micro_batch: 1, precision: bf16}
plan: {tp: 1, pp: 2, dp: 8, zero: 3, stage_layers: [5, 7], zero_quantized_weights: true,
       zero_quantized_gradients: true, zero_hpz_partition_size: 2, flash_attention: false}
)";

// Loading the scenario with a plan's overrides gives that plan, knob for knob, and the
// micro-batch: the overrides name every searched knob and every scenario setting the plan
// changed. Before the table, a non-ZeRO-3 plan's overrides kept the scenario's qwZ and the
// scenario refused them.
TEST(Candidate, OverridesLoadBackIntoTheSamePlan) {
  const Scenario base = load_scenario_text(kScenario);
  SearchSpaceOptions o;
  o.min_gpus = 1, o.max_gpus = 16, o.max_micro_batch = 2, o.max_cp = 2;
  int n = 0, checked = 0, zero3 = 0;
  for_each_candidate(make_search_space(base, o), [&](const Candidate& c) {
    if (n++ % 23 != 0) return;
    const Scenario s = load_scenario_text(kScenario, test::words(to_overrides(c, base.plan)));
    for_each_plan_knob([&](const auto& knob) {
      if constexpr (kSearchable<std::decay_t<decltype(knob)>>) {
        EXPECT_EQ(s.plan.*knob.member, c.*knob.member) << knob.key << " of " << describe(c);
      }
    });
    EXPECT_FALSE(s.plan.flash_attention) << "a scenario setting the search keeps";
    EXPECT_EQ(s.training->micro_batch, c.micro_batch) << describe(c);
    if (c.shards_params() && c.overlap_grad_reduce) ++zero3;
    ++checked;
  });
  EXPECT_GT(checked, 100);
  EXPECT_GT(zero3, 10);  // some kept ZeRO++
}

// A scenario's compression setting leaves with its compression: a ZeRO-3 plan of a PowerSGD
// (or top-k) scenario drops the compression, and its overrides reset the rank (ratio) to
// the default, which a plan without the compression may not name (before: refused on load).
TEST(Candidate, OverridesDropACompressionWithItsSetting) {
  for (const char* compression : {"gradient_compression: powersgd, gradient_powersgd_rank: 4",
                                  "gradient_compression: topk, gradient_topk_ratio: 0.1"}) {
    const std::string text = std::string(R"(
model: {layers: 4, hidden: 256, heads: 4, ffn_hidden: 1024, vocab: 1000}
cluster: dgx-h100
training: {seq_len: 256, global_batch: 16, micro_batch: 1, precision: bf16}
plan: {tp: 1, pp: 1, dp: 8, zero: 1, )") + compression + "}\n";
    const Scenario base = load_scenario_text(text);
    SearchSpaceOptions o;
    o.min_gpus = 8, o.max_gpus = 8, o.max_micro_batch = 1, o.max_cp = 1;
    int dropped = 0, kept = 0;
    for_each_candidate(make_search_space(base, o), [&](const Candidate& c) {
      const Scenario s = load_scenario_text(text, test::words(to_overrides(c, base.plan)));
      EXPECT_EQ(s.plan.gradient_compression, c.gradient_compression) << describe(c);
      EXPECT_EQ(s.plan.gradient_powersgd_rank, c.gradient_powersgd_rank) << describe(c);
      EXPECT_EQ(s.plan.gradient_topk_ratio, c.gradient_topk_ratio) << describe(c);
      (c.gradient_compression == GradCompression::none ? dropped : kept) += 1;
    });
    EXPECT_GT(dropped, 0) << compression;
    EXPECT_GT(kept, 0) << compression;
  }
}

// A scenario's hybrid sharding (plan.dp_replicate: 2) stays with the searched plans it fits,
// ZeRO 1-3 with an even dp, and leaves the rest (ZeRO-0, dp of 1); a ZeRO-3 plan is also tried
// without replicas (one node: no node-sized shard group to try besides): each plan's overrides
// load back (the scenario rules accept them) into the same replicas.
TEST(Candidate, HybridShardingStaysWhereItFits) {
  const std::string text = R"(
model: {layers: 4, hidden: 256, heads: 4, kv_heads: 4, ffn_hidden: 1024, vocab: 1000,
        activation: swiglu, norm: rmsnorm, position: rope, bias: false, tied_embeddings: false}
cluster: dgx-h100
training: {seq_len: 256, global_batch: 16, micro_batch: 1, precision: bf16}
plan: {tp: 1, pp: 1, dp: 8, zero: 3, dp_replicate: 2}
)";
  const Scenario base = load_scenario_text(text);
  SearchSpaceOptions o;
  o.min_gpus = 8, o.max_gpus = 8, o.max_micro_batch = 1, o.max_cp = 1;
  int dropped = 0, kept = 0, zero3_unreplicated = 0;
  for_each_candidate(make_search_space(base, o), [&](const Candidate& c) {
    const Scenario s = load_scenario_text(text, test::words(to_overrides(c, base.plan)));
    EXPECT_EQ(s.plan.dp_replicate, c.dp_replicate) << describe(c);
    const bool fits = c.zero >= 1 && c.dp % 2 == 0;
    if (fits && c.zero == 3 && c.dp_replicate == 1) {
      ++zero3_unreplicated;
      return;
    }
    EXPECT_EQ(c.dp_replicate, fits ? 2 : 1) << describe(c);
    (c.dp_replicate == 1 ? dropped : kept) += 1;
  });
  EXPECT_GT(dropped, 0);
  EXPECT_GT(kept, 0);
  EXPECT_GT(zero3_unreplicated, 0);
}

// No two plans of a space share a short form (the merged search's test tells plans apart by it).
TEST(Candidate, ShortFormsTellPlansApart) {
  const Scenario base = load_scenario_text(kScenario);
  SearchSpaceOptions o;
  o.min_gpus = 1, o.max_gpus = 16, o.max_micro_batch = 2, o.max_cp = 2;
  std::map<std::string, std::string> seen;  // short form -> overrides
  for_each_candidate(make_search_space(base, o), [&](const Candidate& c) {
    const auto [it, fresh] = seen.emplace(describe(c), to_overrides(c, base.plan));
    EXPECT_TRUE(fresh) << describe(c) << ": " << it->second;
  });
  EXPECT_GT(seen.size(), 1000u);
  Candidate c;
  c.tp = 8, c.pp = 4, c.dp = 32, c.ep = 2, c.zero = 1, c.recompute = Recompute::selective;
  c.schedule = Schedule::interleaved, c.virtual_stages = 2, c.sequence_parallel = true;
  c.overlap_grad_reduce = false, c.tp_comm_overlap = true, c.offload_optimizer = true;
  EXPECT_EQ(describe(c), "tp8 pp4 dp32 cp1 ep2 mb1 zero1 selective interleaved v2 sp no-grad-overlap tp-overlap offload");
}

// The CSV's columns as docs/SCENARIO.md gives them: offload_optimizer after the metrics, then
// offload_activations_layers, offload_device, expert_tp (0: the experts follow tp), dp_replicate
// (1: no hybrid sharding), and stack last (the one the plan was priced on).
TEST(Candidate, CsvColumnsKeepTheirPlace) {
  SearchResult r;
  r.stack = "megatron-core";
  SearchEntry e;
  e.plan.tp = 2, e.plan.dp = 4, e.plan.micro_batch = 3, e.plan.offload_optimizer = true;
  e.analytic.step_s = 1.5, e.analytic.peak_bytes = 7;
  r.top.push_back(e);
  std::ostringstream out;
  write_csv(out, r);
  EXPECT_EQ(out.str(),
            "rank,gpus,tp,pp,dp,cp,ep,micro_batch,zero,recompute,schedule,virtual_stages,sequence_parallel,"
            "overlap_grad_reduce,overlap_param_gather,tp_comm_overlap,analytic_step_s,simulated_step_s,peak_bytes,"
            "pareto,offload_optimizer,offload_activations_layers,offload_device,expert_tp,dp_replicate,stack\n"
            "1,8,2,1,4,1,1,3,0,none,1f1b,1,0,1,1,0,1.5,,7,0,1,0,cpu,0,1,megatron-core\n");
}

}  // namespace
}  // namespace twinsim
