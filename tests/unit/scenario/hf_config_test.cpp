// Hugging Face config.json mapping: what each family's fields become, and the table of
// bad configs refused with the field named.
#include <gtest/gtest.h>

#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include "scenario/errors.hpp"
#include "scenario/hf_config.hpp"
#include "scenario/load.hpp"
#include "scenario/read_sections.hpp"

namespace twinsim {
namespace {

ModelSpec map(const std::string& json) {
  const YAML::Node mapped = model_node_from_hf_config(YAML::Load(json), "model.hf_config");
  return read_model(mapped, "model");
}

const char* kLlama = R"({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64,
  "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 160, "vocab_size": 1000,
  "max_position_embeddings": 4096, "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "hidden_act": "silu",
  "tie_word_embeddings": false, "torch_dtype": "bfloat16", "architectures": ["LlamaForCausalLM"]})";

TEST(HfConfig, LlamaFieldsMapOntoModelKeys) {
  const ModelSpec m = map(kLlama);
  EXPECT_EQ(m.layers, 2);
  EXPECT_EQ(m.hidden, 64);
  EXPECT_EQ(m.heads, 4);
  EXPECT_EQ(m.kv_heads, 2);
  EXPECT_EQ(m.head_dim, 16);
  EXPECT_EQ(m.ffn_hidden, 160);
  EXPECT_EQ(m.activation, Activation::swiglu);
  EXPECT_EQ(m.norm, Norm::rmsnorm);
  EXPECT_EQ(m.position, Position::rope);
  EXPECT_FALSE(m.tied_embeddings);
  EXPECT_FALSE(m.bias);
}

TEST(HfConfig, FamilyFeatures) {
  const ModelSpec qwen2 = map(R"({"model_type": "qwen2", "num_hidden_layers": 2, "hidden_size": 64,
    "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100, "sliding_window": 4096,
    "use_sliding_window": false, "max_window_layers": 28})");
  EXPECT_TRUE(qwen2.qkv_bias);
  EXPECT_FALSE(qwen2.bias);
  EXPECT_EQ(qwen2.sliding_window, 0);  // use_sliding_window false
  const ModelSpec gemma2 = map(R"({"model_type": "gemma2", "num_hidden_layers": 4, "hidden_size": 64,
    "num_attention_heads": 4, "head_dim": 32, "intermediate_size": 128, "vocab_size": 100,
    "sliding_window": 16, "hidden_activation": "gelu_pytorch_tanh", "final_logit_softcapping": 30.0})");
  EXPECT_EQ(gemma2.activation, Activation::geglu);
  EXPECT_TRUE(gemma2.sandwich_norm);
  EXPECT_TRUE(gemma2.tied_embeddings);  // Gemma2Config's default
  EXPECT_EQ(gemma2.q_width(), 128);
  EXPECT_TRUE(gemma2.is_windowed_layer(0));
  EXPECT_FALSE(gemma2.is_windowed_layer(1));
  const ModelSpec ds = map(R"({"model_type": "deepseek_v3", "num_hidden_layers": 4, "hidden_size": 64,
    "num_attention_heads": 4, "num_key_value_heads": 4, "intermediate_size": 128, "vocab_size": 100,
    "q_lora_rank": 16, "kv_lora_rank": 8, "qk_nope_head_dim": 8, "qk_rope_head_dim": 4, "v_head_dim": 6,
    "n_routed_experts": 8, "n_shared_experts": 1, "num_experts_per_tok": 2, "moe_intermediate_size": 32,
    "first_k_dense_replace": 1, "moe_layer_freq": 1, "topk_method": "noaux_tc", "n_group": 2,
    "topk_group": 1, "num_nextn_predict_layers": 1, "hidden_act": "silu"})");
  ASSERT_TRUE(ds.mla && ds.moe);
  EXPECT_EQ(ds.mla->kv_lora_rank, 8);
  EXPECT_EQ(ds.moe->dense_layers, 1);
  EXPECT_TRUE(ds.moe->router_bias);
  EXPECT_EQ(ds.mtp_layers, 1);
  const ModelSpec lite = map(R"({"model_type": "deepseek_v2", "num_hidden_layers": 2, "hidden_size": 64,
    "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100, "q_lora_rank": null,
    "kv_lora_rank": 8, "qk_nope_head_dim": 8, "qk_rope_head_dim": 4, "v_head_dim": 6})");
  EXPECT_EQ(lite.mla->q_lora_rank, 0);
  EXPECT_FALSE(lite.moe.has_value());  // no n_routed_experts: a dense DeepSeek
}

struct BadConfig {
  const char* what;
  const char* json;
  const char* field;  // the key the message must name
};

// Each row breaks one rule of a llama-like config.
const BadConfig kBad[] = {
    {"DeepSeekMoE with a sigmoid router", R"({"model_type": "deepseek", "num_hidden_layers": 2, "hidden_size": 64,
      "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100, "n_routed_experts": 8,
      "num_experts_per_tok": 2, "moe_intermediate_size": 32, "scoring_func": "sigmoid"})", "scoring_func"},
    {"DeepSeekMoE with MoE every other layer", R"({"model_type": "deepseek", "num_hidden_layers": 2,
      "hidden_size": 64, "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100,
      "n_routed_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 32, "moe_layer_freq": 2})",
     "moe_layer_freq"},
    {"unknown family", R"({"model_type": "llama4", "hidden_size": 64})", "model_type"},
    {"no family", R"({"hidden_size": 64})", "model_type"},
    {"missing width", R"({"model_type": "llama", "num_hidden_layers": 2, "num_attention_heads": 4,
      "intermediate_size": 128, "vocab_size": 100})", "hidden_size"},
    {"contradictory heads", R"({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64,
      "num_attention_heads": 4, "num_key_value_heads": 3, "intermediate_size": 128, "vocab_size": 100})",
     "num_key_value_heads"},
    {"unknown field", R"({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64,
      "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100, "cross_attention_layers": [3]})",
     "cross_attention_layers"},
    {"ungated activation", R"({"model_type": "mistral", "num_hidden_layers": 2, "hidden_size": 64,
      "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100, "hidden_act": "relu"})", "hidden_act"},
    {"half the biases", R"({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64,
      "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100, "attention_bias": true})", "mlp_bias"},
    {"negative width", R"({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": -64,
      "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100})", "hidden_size"},
    {"sparse step", R"({"model_type": "qwen2_moe", "num_hidden_layers": 2, "hidden_size": 64,
      "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100, "num_experts": 8,
      "num_experts_per_tok": 2, "moe_intermediate_size": 32, "shared_expert_intermediate_size": 64,
      "decoder_sparse_step": 2})", "decoder_sparse_step"},
    {"dense layers among MoE", R"({"model_type": "qwen3_moe", "num_hidden_layers": 2, "hidden_size": 64,
      "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100, "num_experts": 8,
      "num_experts_per_tok": 2, "moe_intermediate_size": 32, "mlp_only_layers": [0]})", "mlp_only_layers"},
    {"qwen2 partial windows", R"({"model_type": "qwen2", "num_hidden_layers": 2, "hidden_size": 64,
      "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100, "use_sliding_window": true})",
     "use_sliding_window"},
    {"MLA without latent", R"({"model_type": "deepseek_v2", "num_hidden_layers": 2, "hidden_size": 64,
      "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100, "qk_nope_head_dim": 8,
      "qk_rope_head_dim": 4, "v_head_dim": 6})", "kv_lora_rank"},
    {"MoE every other layer", R"({"model_type": "deepseek_v2", "num_hidden_layers": 2, "hidden_size": 64,
      "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100, "kv_lora_rank": 8,
      "qk_nope_head_dim": 8, "qk_rope_head_dim": 4, "v_head_dim": 6, "moe_layer_freq": 2})", "moe_layer_freq"},
    {"unknown routing", R"({"model_type": "deepseek_v3", "num_hidden_layers": 2, "hidden_size": 64,
      "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100, "kv_lora_rank": 8,
      "qk_nope_head_dim": 8, "qk_rope_head_dim": 4, "v_head_dim": 6, "n_routed_experts": 8,
      "num_experts_per_tok": 2, "moe_intermediate_size": 32, "topk_method": "sinkhorn"})", "topk_method"},
    {"window pattern broken", R"({"model_type": "gemma2", "num_hidden_layers": 2, "hidden_size": 64,
      "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100, "sliding_window": 16,
      "layer_types": ["full_attention", "sliding_attention"]})", "layer_types[0]"},
    {"vision-language", R"({"model_type": "gemma3", "text_config": {"hidden_size": 64}})", "model_type"},
    {"not an object", R"([1, 2, 3])", "model.hf_config"},
    {"width as a word", R"({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": "wide",
      "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100})", "hidden_size"},
    {"width as a list", R"({"model_type": "llama", "num_hidden_layers": [2], "hidden_size": 64,
      "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100})", "num_hidden_layers"},
    {"fractional heads", R"({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64,
      "num_attention_heads": 4.5, "intermediate_size": 128, "vocab_size": 100})", "num_attention_heads"},
    {"absurd width", R"({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 1e300,
      "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100})", "hidden_size"},
    {"family as a number", R"({"model_type": 7, "hidden_size": 64})", "model_type"},
    {"bias as text", R"({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64,
      "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100, "attention_bias": "yes"})",
     "attention_bias"},
    {"gpt2 relu", R"({"model_type": "gpt2", "n_layer": 2, "n_embd": 64, "n_head": 4, "vocab_size": 100,
      "n_positions": 128, "activation_function": "relu"})", "activation_function"},
};

TEST(HfConfig, BadConfigsNameTheField) {
  for (const BadConfig& bad : kBad) {
    try {
      map(bad.json);
      ADD_FAILURE() << bad.what << ": accepted";
    } catch (const ScenarioError& e) {
      EXPECT_NE(std::string(e.what()).find(bad.field), std::string::npos) << bad.what << ": " << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << bad.what << ": not a ScenarioError: " << e.what();
    }
  }
}

TEST(HfConfig, ScenarioKeysBesideTheConfigOverrideIt) {
  const std::string dir = ::testing::TempDir();
  const std::string file = dir + "/tiny_llama_config.json";
  {
    FILE* f = std::fopen(file.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs(kLlama, f);
    std::fclose(f);
  }
  const Scenario s = load_scenario_text("model: {hf_config: " + file + ", layers: 1}\n"
                                        "cluster: dgx-a100-80gb\nplan: {tp: 1}\n"
                                        "training: {global_batch: 8, micro_batch: 1, seq_len: 128}\n");
  EXPECT_EQ(s.model.layers, 1);  // overridden
  EXPECT_EQ(s.model.kv_heads, 2);
  EXPECT_EQ(s.model.name, "tiny_llama_config");
  EXPECT_EQ(load_model(file).layers, 2);
  EXPECT_THROW(load_scenario_text("model: {hf_config: /no/such/config.json}\ncluster: dgx-a100-80gb\n"
                                  "training: {global_batch: 8}\n"),
               ScenarioError);
}

}  // namespace
}  // namespace twinsim
