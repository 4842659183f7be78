// Parameter counts of the Hugging Face configs in models/catalog/hf, computed through the
// config mapping, against what their publishers state (models/catalog/hf/SOURCES.md).
// A figure published rounded is checked to its last printed digit; publishers differ on
// what "active" counts, so each row says which convention its source uses.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "models/catalog.hpp"
#include "models/param_count.hpp"
#include "scenario/load.hpp"

namespace twinsim {
namespace {

ParamCount counts(const std::string& name) { return count_params(catalog_model(name)); }
double billions(std::int64_t n) { return static_cast<double>(n) / 1e9; }

TEST(HfCatalogCounts, ExactTotals) {
  // Mixtral-8x7B: 46,702,792,704 (HF safetensors of mistralai/Mixtral-8x7B-v0.1, as the
  // YAML entry's header records it)
  EXPECT_EQ(counts("mixtral-8x7b-v0.1").total, 46702792704);
  // Qwen2.5-72B-Instruct: 72,706,203,648, the sum of its safetensors tensors
  // (gogongxt/python scripts/models/qwen2.5_72b_instruct.md; the card's 72.7B)
  EXPECT_EQ(counts("qwen2.5-72b").total, 72706203648);
  // GPT-2: 124,439,808 (the existing gpt2-small test; openai-community/gpt2)
  EXPECT_EQ(counts("gpt2").total, 124439808);
}

TEST(HfCatalogCounts, HfConfigsAgreeWithTheHandWrittenEntries) {
  // the same model through two independent paths: the HF mapping and a YAML entry written
  // from the paper's table
  const std::pair<const char*, const char*> pairs[] = {
      {"mixtral-8x7b-v0.1", "mixtral-8x7b"}, {"llama-3.1-405b", "llama3-405b"}, {"gpt2", "gpt2-small"}};
  for (const auto& [hf, yaml] : pairs) {
    const ParamCount a = counts(hf), y = counts(yaml);
    EXPECT_EQ(a.total, y.total) << hf;
    EXPECT_EQ(a.active, y.active) << hf;
    EXPECT_GT(a.total, 0) << hf;
  }
}

TEST(HfCatalogCounts, NoNameInBothCatalogs) {
  for (const auto& [hf, json] : hf_model_catalog_files())
    for (const auto& [yaml, text] : model_catalog_files()) EXPECT_NE(hf, yaml) << "one name, two entries";
}

TEST(HfCatalogCounts, RoundedTotalsToTheirLastDigit) {
  // DeepSeek-V3: 671B main model, MTP apart (HF card: 685B = 671B + 14B MTP)
  EXPECT_NEAR(billions(counts("deepseek-v3").total), 671, 0.5);
  // Qwen3-235B-A22B: 235B (card); Qwen3-8B: 8.2B, 6.95B without embedding and output layer
  EXPECT_NEAR(billions(counts("qwen3-235b-a22b").total), 235, 0.5);
  const ParamCount q8 = counts("qwen3-8b");
  EXPECT_NEAR(billions(q8.total), 8.2, 0.05);
  EXPECT_NEAR(billions(q8.total - q8.embedding - q8.output_layer), 6.95, 0.005);
  // Mistral-7B-v0.1: 7.24B (Ollama's GGUF metadata for the same shapes)
  EXPECT_NEAR(billions(counts("mistral-7b").total), 7.24, 0.005);
  // gpt-oss-120b: 116.8B (OpenAI model card)
  EXPECT_NEAR(billions(counts("gpt-oss-120b").total), 116.8, 0.05);
}

TEST(HfCatalogCounts, ActiveParametersByEachPublishersConvention) {
  // DeepSeek-V3 README_WEIGHTS: 36.6B activated, the output head counted, the input
  // embedding (a lookup) not
  const ParamCount v3 = counts("deepseek-v3");
  EXPECT_NEAR(billions(v3.active - v3.embedding), 36.6, 0.05);
  // gpt-oss-120b: 5.1B active (OpenAI), likewise without the embedding
  const ParamCount oss = counts("gpt-oss-120b");
  EXPECT_NEAR(billions(oss.active - oss.embedding), 5.1, 0.05);
  // Mixtral: 12.9B active per token, everything a token touches
  EXPECT_NEAR(billions(counts("mixtral-8x7b-v0.1").active), 12.9, 0.05);
  // Qwen3-235B-A22B: 22B activated
  EXPECT_NEAR(billions(counts("qwen3-235b-a22b").active), 22, 0.5);
  // Qwen3-30B-A3B (Qwen's model card): 30.5B in total, 29.9B without the embedding and the
  // output layer, 3.3B activated (3.35B computed: the card's figure cut, not rounded)
  const ParamCount q30 = counts("qwen3-30b-a3b");
  EXPECT_NEAR(billions(q30.total), 30.5, 0.05);
  EXPECT_NEAR(billions(q30.total - q30.embedding - q30.output_layer), 29.9, 0.05);
  EXPECT_GE(billions(q30.active), 3.3);
  EXPECT_LT(billions(q30.active), 3.4);
}

TEST(HfCatalogCounts, DeepSeekV3MultiTokenPrediction) {
  // README_WEIGHTS: the MTP module holds 11.5B unique parameters (embedding and head
  // shared). twinsim's module (DeepSeek-V3 §2.2: its transformer block, 11.51B, plus the
  // 2h x h projection and three norms, 0.10B) is 11.61B: within 1% of the rounded figure
  const ParamCount v3 = counts("deepseek-v3");
  EXPECT_NEAR(billions(v3.mtp), 11.5, 0.115);
}

}  // namespace
}  // namespace twinsim
