// The plan's knob table (models/plan_fields.hpp) against what it describes: the Plan
// struct's own defaults, the reader, and the documentation users read.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <type_traits>

#include "models/plan_fields.hpp"
#include "scenario/errors.hpp"
#include "scenario/read_sections.hpp"

namespace twinsim {
namespace {

// The table's fallback for a knob, as the Plan member holds it.
template <class Knob>
bool holds_fallback(const Knob& k, const Plan& p) {
  if constexpr (std::is_same_v<Knob, LayerListKnob>)
    return (p.*k.member).empty();
  else
    return p.*k.member == k.fallback;
}

// A plan section that leaves every knob out reads as the table's fallbacks, and those are
// the struct's own initialisers (but plan.dp: 0 read, "the rest", resolved later).
TEST(PlanKnobs, FallbacksAreTheReaderAndTheStructDefaults) {
  const Plan read = read_plan(YAML::Load("{}"), "plan");
  const Plan plain;
  for_each_plan_knob([&](const auto& knob) {
    EXPECT_TRUE(holds_fallback(knob, read)) << knob.key;
    if (knob.key != "dp") {
      EXPECT_TRUE(holds_fallback(knob, plain)) << knob.key;
    }
  });
  EXPECT_EQ(read.dp, 0);
}

// Every knob set away from its fallback in a file reads back into its own member (a row
// naming the wrong member fails here; a new knob's key joins this mapping).
TEST(PlanKnobs, EachKeyReadsIntoItsMember) {
  std::ostringstream yaml;
  yaml << "{tp: 2, pp: 3, dp: 4, cp: 5, ep: 6, zero: 2, recompute: full, schedule: interleaved, "
          "virtual_stages: 7, stage_layers: [8, 9, 10], account_for_embedding_in_pipeline_split: true, "
          "account_for_loss_in_pipeline_split: true, sequence_parallel: true, overlap_grad_reduce: false, "
          "overlap_param_gather: false, dp_bucket_size: 12, tp_comm_overlap: true, flash_attention: false, "
          "fp8_activation_input: true, fp8_attention: true, fp8_moe_act_cache: true, offload_optimizer: true, "
          "offload_params: true, offload_device: nvme, offload_activations_layers: 14, "
          "zero_quantized_weights: true, zero_quantized_gradients: true, zero_hpz_partition_size: 11, dp_replicate: 2, "
          "gradient_compression: topk, gradient_topk_ratio: 0.25, expert_tp: 3, recompute_modules: [layernorm, "
          "moe_act], moe_a2a_overlap: true, delay_wgrad_compute: true, exp_avg_dtype: fp8, "
          "exp_avg_sq_dtype: bf16, main_params_dtype: fp16}";
  const Plan p = read_plan(YAML::Load(yaml.str()), "plan");
  // each compression's own setting comes only with it: the rank is read in a plan of its own
  const Plan powersgd = read_plan(YAML::Load("{gradient_compression: powersgd, gradient_powersgd_rank: 13}"), "plan");
  EXPECT_EQ(powersgd.gradient_powersgd_rank, 13);
  EXPECT_EQ(powersgd.gradient_compression, GradCompression::powersgd);
  for_each_plan_knob([&](const auto& knob) {
    if (knob.key != "gradient_powersgd_rank") { EXPECT_FALSE(holds_fallback(knob, p)) << knob.key; }
  });
  EXPECT_EQ(p.tp, 2);
  EXPECT_EQ(p.ep, 6);
  EXPECT_EQ(p.expert_tp, 3);
  EXPECT_EQ(p.recompute_modules, (1u << static_cast<int>(RecomputeModule::layernorm)) |
                                     (1u << static_cast<int>(RecomputeModule::moe_act)));
  EXPECT_EQ(p.virtual_stages, 7);
  EXPECT_EQ(p.stage_layers, (std::vector<int>{8, 9, 10}));
  EXPECT_TRUE(p.account_for_embedding_in_pipeline_split);
  EXPECT_TRUE(p.account_for_loss_in_pipeline_split);
  EXPECT_EQ(p.zero_hpz_partition_size, 11);
  EXPECT_EQ(p.dp_replicate, 2);
  EXPECT_TRUE(p.fp8_moe_act_cache);
  EXPECT_EQ(p.dp_bucket_size, 12);
  EXPECT_EQ(p.offload_activations_layers, 14);
  EXPECT_EQ(p.schedule, Schedule::interleaved);
  EXPECT_EQ(p.offload_device, OffloadDevice::nvme);
  EXPECT_EQ(p.gradient_compression, GradCompression::topk);
  EXPECT_DOUBLE_EQ(p.gradient_topk_ratio, 0.25);
  EXPECT_EQ(p.exp_avg_dtype, Dtype::fp8);
  EXPECT_EQ(p.exp_avg_sq_dtype, Dtype::bf16);
  EXPECT_EQ(p.main_params_dtype, Dtype::fp16);
}

// A knob's text (what `--set` overrides write) reads back as the same value: a ratio with
// more digits than a stream's default 6 keeps them all.
TEST(PlanKnobs, TextReadsBackAsTheSameValue) {
  Plan p;
  p.gradient_compression = GradCompression::topk;
  p.gradient_topk_ratio = 0.123456789012345;
  p.schedule = Schedule::interleaved;
  std::ostringstream yaml;
  yaml << "{";
  for_each_plan_knob([&](const auto& knob) {  // a knob at its fallback reads back as it trivially
    if constexpr (!std::is_same_v<std::decay_t<decltype(knob)>, LayerListKnob>)
      if (!holds_fallback(knob, p)) yaml << knob.key << ": " << knob_text(knob, p) << ", ";
  });
  yaml << "}";
  const Plan read = read_plan(YAML::Load(yaml.str()), "plan");
  EXPECT_EQ(read.gradient_topk_ratio, p.gradient_topk_ratio) << yaml.str();
  EXPECT_EQ(read.schedule, Schedule::interleaved);
  EXPECT_EQ(read.gradient_compression, GradCompression::topk);
}

// The reader keeps each row's range and the one cross-key rule it owns.
TEST(PlanKnobs, RangesAndChoicesAreRefusedByName) {
  auto refusal = [](const std::string& yaml) -> std::string {
    try {
      read_plan(YAML::Load(yaml), "plan");
    } catch (const ScenarioError& e) {
      return e.what();
    }
    return "accepted";
  };
  EXPECT_NE(refusal("{zero: 4}").find("plan.zero"), std::string::npos);
  EXPECT_NE(refusal("{tp: 0}").find("plan.tp"), std::string::npos);
  EXPECT_NE(refusal("{schedule: zigzag}").find("interleaved"), std::string::npos);  // lists the choices
  EXPECT_NE(refusal("{gradient_topk_ratio: 0.1}").find("needs plan.gradient_compression=topk"), std::string::npos);
  EXPECT_EQ(refusal("{gradient_compression: topk, gradient_topk_ratio: 0.1}"), "accepted");
  EXPECT_NE(refusal("{gradient_compression: topk, gradient_powersgd_rank: 2}").find("needs plan.gradient_compression=powersgd"),
            std::string::npos);
  EXPECT_NE(refusal("{gradient_compression: powersgd, gradient_powersgd_rank: 0}").find("plan.gradient_powersgd_rank"),
            std::string::npos);
}

// docs/SCENARIO.md, the contract users read, names every knob: in the example's `plan:`
// block (the keys SCENARIO.md began with) or as `plan.<key>` (the extensions' table).
TEST(PlanKnobs, EveryKnobIsDocumented) {
  // the contract's pages (docs/SCENARIO.md, the index, and docs/scenario/*.md) as one text
  std::stringstream text;
  for (const auto& page : std::filesystem::directory_iterator(std::string(TWINSIM_SOURCE_DIR) + "/docs/scenario"))
    if (page.path().extension() == ".md") text << std::ifstream(page.path()).rdbuf() << "\n";
  const std::string doc = text.str();
  const std::size_t block = doc.find("\nplan:\n");
  ASSERT_NE(block, std::string::npos) << "the example's plan block";
  const std::string example = doc.substr(block, doc.find("```", block) - block);
  std::set<std::string> keys;
  for_each_plan_knob([&](const auto& knob) {
    const std::string key(knob.key);
    EXPECT_TRUE(keys.insert(key).second) << "two rows for " << key;
    const bool in_example = example.find("\n  " + key + ":") != std::string::npos;
    EXPECT_TRUE(in_example || doc.find("`plan." + key + "`") != std::string::npos) << key;
  });
}

}  // namespace
}  // namespace twinsim
