// The transformers config.json `checkpoint merge --hf-config` writes (exec/train/hf_names),
// read back by twinsim's own reader of published configs (scenario/hf_config.cpp, written
// from transformers' configuration classes): the same architecture comes out.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "exec/train/hf_names.hpp"
#include "models/param_count.hpp"
#include "scenario/errors.hpp"
#include "scenario/load.hpp"

namespace twinsim::exec {
namespace {

void expect_round_trip(const std::string& name, const std::string& model_type) {
  const ModelSpec m = catalog_model(name);
  const nlohmann::json config = hf_config(m, Dtype::bf16);
  EXPECT_EQ(config["model_type"], model_type);
  EXPECT_EQ(config["torch_dtype"], "bfloat16");
  const ModelSpec back = load_model_text("{hf_config: " + config.dump() + "}");
  EXPECT_EQ(back.layers, m.layers);
  EXPECT_EQ(back.hidden, m.hidden);
  EXPECT_EQ(back.heads, m.heads);
  EXPECT_EQ(back.kv_heads, m.kv_heads);
  EXPECT_EQ(back.ffn_hidden, m.ffn_hidden);
  EXPECT_EQ(back.vocab, m.vocab);
  EXPECT_EQ(back.max_seq_len, m.max_seq_len);
  EXPECT_EQ(back.tied_embeddings, m.tied_embeddings);
  EXPECT_EQ(back.norm, m.norm);
  EXPECT_EQ(back.activation, m.activation);
  EXPECT_EQ(back.position, m.position);
  EXPECT_EQ(back.bias, m.bias);
}

TEST(HfConfigWriter, TinyGptReadsBackAsGpt2) { expect_round_trip("tiny-gpt", "gpt2"); }
TEST(HfConfigWriter, TinyLlamaReadsBackAsLlama) { expect_round_trip("tiny-llama", "llama"); }

// The mixture of experts the executor runs, as DeepSeekMoE's config (model_type deepseek)
TEST(HfConfigWriter, TinyMoeReadsBackAsDeepSeekMoe) {
  expect_round_trip("tiny-moe", "deepseek");
  const ModelSpec m = catalog_model("tiny-moe");
  const nlohmann::json config = hf_config(m, Dtype::fp32);
  EXPECT_EQ(config["scoring_func"], "softmax");
  EXPECT_EQ(config["norm_topk_prob"], false);
  const ModelSpec back = load_model_text("{hf_config: " + config.dump() + "}");
  ASSERT_TRUE(back.moe.has_value());
  EXPECT_EQ(back.moe->experts, m.moe->experts);
  EXPECT_EQ(back.moe->top_k, m.moe->top_k);
  EXPECT_EQ(back.moe->expert_ffn_hidden, m.moe->expert_ffn_hidden);
  EXPECT_EQ(back.moe->shared_experts, m.moe->shared_experts);
  EXPECT_EQ(back.moe->dense_layers, m.moe->dense_layers);
}

// ... and with latent attention, as DeepSeek-V2's (model_type deepseek_v2)
TEST(HfConfigWriter, TinyMlaReadsBackAsDeepSeekV2) {
  const ModelSpec m = catalog_model("tiny-mla");
  const nlohmann::json config = hf_config(m, Dtype::fp32);
  EXPECT_EQ(config["model_type"], "deepseek_v2");
  const ModelSpec back = load_model_text("{hf_config: " + config.dump() + "}");
  ASSERT_TRUE(back.mla && back.moe);
  EXPECT_EQ(back.mla->q_lora_rank, 96);
  EXPECT_EQ(back.mla->kv_lora_rank, 64);
  EXPECT_EQ(back.mla->qk_rope_head_dim, 16);
  EXPECT_EQ(back.mla->v_head_dim, 32);
  EXPECT_EQ(back.head_dim, m.head_dim);
  EXPECT_FALSE(back.moe->router_bias);
  EXPECT_EQ(back.moe->dense_layers, 1);
  EXPECT_EQ(count_params(back).total, count_params(m).total);
}

TEST(HfConfigWriter, TheExecutorsNumericsAreWritten) {
  const nlohmann::json gpt = hf_config(catalog_model("tiny-gpt"), Dtype::fp32);
  EXPECT_EQ(gpt["activation_function"], "gelu_new");  // the tanh GeLU the kernels compute
  EXPECT_EQ(gpt["layer_norm_epsilon"], 1e-5);
  const nlohmann::json llama = hf_config(catalog_model("tiny-llama"), Dtype::fp32);
  EXPECT_EQ(llama["rms_norm_eps"], 1e-5);
  EXPECT_EQ(llama["rope_theta"], 10000.0);
  // the executor runs Mixtral's shape with DeepSeekMoE's router: written as what it ran
  EXPECT_EQ(hf_config(catalog_model("mixtral-8x7b"), Dtype::bf16)["model_type"], "deepseek");
  EXPECT_THROW(hf_config(catalog_model("deepseek-v3"), Dtype::bf16), std::invalid_argument);  // MLA
}

}  // namespace
}  // namespace twinsim::exec
