// Every Hugging Face config of the catalog (models/catalog/hf) runs through the simulator
// as a training step and a served batch, with figures that could come out wrong: MFU
// inside (0, 1), the KV cache per token from the architecture by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "models/param_count.hpp"

#include "models/catalog.hpp"
#include "scenario/load.hpp"
#include "sim/inference/batch_prediction.hpp"
#include "sim/training/training_report.hpp"

namespace twinsim {
namespace {

// The widest TP of 8, 4, 2, 1 that splits whole query and KV heads (GPT-2: 12 heads -> 4).
std::int64_t tp_for(const ModelSpec& m) {
  for (std::int64_t tp : {8, 4, 2})
    if (m.heads % tp == 0 && m.kv_heads % tp == 0) return tp;
  return 1;
}

Scenario training_scenario(const std::string& name) {
  const ModelSpec m = catalog_model(name);
  const bool moe = m.moe.has_value();
  // 32 GPUs: TP up to 8 (Megatron splits whole KV heads), data parallel over the rest,
  // MoE experts over 4 ranks
  const std::int64_t tp = tp_for(m);
  std::string text = "model: " + name + "\ncluster: dgx-h100\n" + "plan: {tp: " + std::to_string(tp) +
                     ", pp: 1, dp: " + std::to_string(32 / tp) + ", ep: " + (moe ? "4" : "1") +
                     ", recompute: full, zero: 1, sequence_parallel: " + (moe && tp > 1 ? "true" : "false") +
                     "}\n" +  // Megatron-core: EP with TP needs SP

                     "stack: megatron-eager\ntraining: {global_batch: 32, micro_batch: 1, seq_len: " +
                     std::to_string(std::min<std::int64_t>(4096, m.max_seq_len)) + "}\n";
  return load_scenario_text(text);
}

TEST(HfCatalogSimulate, EveryConfigTrainsWithAPlausibleMfu) {
  for (const auto& [stem, text] : hf_model_catalog_files()) {
    const std::string name(stem);
    const TrainingPrediction p = predict_training(training_scenario(name));
    EXPECT_TRUE(std::isfinite(p.step_s) && p.step_s > 0) << name;
    // GPT-2 small is host-bound on an eager stack (12 layers of 768); billion-scale models
    // keep the GPU busy enough for a few percent at least (fine-grained MoE on 32 GPUs: 4%)
    const bool small = count_params(catalog_model(name)).total < 1'000'000'000;
    EXPECT_GT(p.throughput.mfu, small ? 0.001 : 0.02) << name;
    EXPECT_LT(p.throughput.mfu, 0.8) << name;
    std::printf("%-18s step %.3f s, MFU %.1f%%\n", name.c_str(), p.step_s, 100 * p.throughput.mfu);
  }
}

// Bytes of K and V (or MLA's latent + RoPE key) one token adds over all layers, bf16,
// from each config's fields by hand.
const std::map<std::string, std::int64_t> kKvBytesPerToken = {
    {"deepseek-v3", (512 + 64) * 61 * 2},         // kv_lora_rank + qk_rope_head_dim, 61 layers
    {"qwen3-8b", 2 * 8 * 128 * 36 * 2},           // 8 KV heads of 128, 36 layers
    {"qwen3-235b-a22b", 2 * 4 * 128 * 94 * 2},    // 4 KV heads of 128, 94 layers
    {"qwen3-30b-a3b", 2 * 4 * 128 * 48 * 2},      // 4 KV heads of 128, 48 layers
    {"llama-3.1-405b", 2 * 8 * 128 * 126 * 2},    // 8 KV heads of 128, 126 layers
    {"mixtral-8x7b-v0.1", 2 * 8 * 128 * 32 * 2},  // 8 KV heads of 128, 32 layers
    {"gpt-oss-120b", 2 * 8 * 64 * 36 * 2},        // 8 KV heads of 64, 36 layers
    {"mistral-7b", 2 * 8 * 128 * 32 * 2},         // 8 KV heads of 128, 32 layers
    {"qwen2.5-72b", 2 * 8 * 128 * 80 * 2},        // 8 KV heads of 128, 80 layers
    {"gpt2", 2 * 12 * 64 * 12 * 2},               // 12 heads of 64, 12 layers
};

TEST(HfCatalogSimulate, EveryConfigServesWithItsKvCacheByHand) {
  for (const auto& [stem, text] : hf_model_catalog_files()) {
    const std::string name(stem);
    const auto expected = kKvBytesPerToken.find(name);
    ASSERT_NE(expected, kKvBytesPerToken.end()) << name << ": add its KV bytes per token, derived by hand";
    const Scenario s = load_scenario_text("model: " + name + "\ncluster: dgx-h100\nplan: {tp: " +
                                          std::to_string(tp_for(catalog_model(name))) + "}\n" +
                                          "inference: {batch: 4, prompt_len: 512, output_len: 16}\n");
    const InferencePrediction p = predict_inference(s);
    EXPECT_EQ(p.kv_cache_bytes_per_token, expected->second) << name;
    EXPECT_GT(p.ttft_s, 0) << name;
    EXPECT_GT(p.tpot_s, 0) << name;
    EXPECT_LT(p.tpot_s, p.ttft_s) << name;  // one token per sequence against 512
  }
}

}  // namespace
}  // namespace twinsim
