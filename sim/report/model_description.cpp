#include "sim/report/model_description.hpp"

#include <nlohmann/json.hpp>

#include "models/param_count.hpp"
#include "sim/memory/inference.hpp"

namespace twinsim {

namespace {

// The inline mapping read_model accepts (scenario/read_model.cpp), every key written out.
nlohmann::json model_keys(const ModelSpec& m) {
  nlohmann::json j = {{"layers", m.layers},
                      {"hidden", m.hidden},
                      {"heads", m.heads},
                      {"kv_heads", m.kv_heads},
                      {"head_dim", m.head_dim},
                      {"ffn_hidden", m.ffn_hidden},
                      {"activation", to_string(m.activation)},
                      {"norm", to_string(m.norm)},
                      {"vocab", m.vocab},
                      {"position", to_string(m.position)},
                      {"rope_scaling", to_string(m.rope_scaling)},
                      {"max_seq_len", m.max_seq_len},
                      {"tied_embeddings", m.tied_embeddings},
                      {"bias", m.bias},
                      {"qkv_bias", m.qkv_bias},
                      {"qk_norm", m.qk_norm},
                      {"sandwich_norm", m.sandwich_norm},
                      {"attention_sinks", m.attention_sinks},
                      {"activation_clamp", m.activation_clamp},
                      {"sliding_window", m.sliding_window},
                      {"global_every", m.global_every},
                      {"mtp_layers", m.mtp_layers},
                      {"dropout", m.dropout}};
  if (m.moe) {
    const MoeSpec& e = *m.moe;
    j["moe"] = {{"experts", e.experts},
                {"top_k", e.top_k},
                {"expert_ffn_hidden", e.expert_ffn_hidden},
                {"shared_experts", e.shared_experts},
                {"shared_expert_ffn_hidden", e.shared_expert_ffn_hidden},
                {"shared_expert_gate", e.shared_expert_gate},
                {"dense_layers", e.dense_layers},
                {"router_bias", e.router_bias},
                {"imbalance", e.imbalance},
                {"capacity_factor", e.capacity_factor},
                {"pad_to_capacity", e.pad_to_capacity},
                {"groups", e.groups},
                {"top_groups", e.top_groups}};
  }
  if (m.mla) {
    const MlaSpec& a = *m.mla;
    j["mla"] = {{"q_lora_rank", a.q_lora_rank},
                {"kv_lora_rank", a.kv_lora_rank},
                {"qk_nope_head_dim", a.qk_nope_head_dim},
                {"qk_rope_head_dim", a.qk_rope_head_dim},
                {"v_head_dim", a.v_head_dim}};
  }
  return j;
}

}  // namespace

nlohmann::json describe_model(const ModelSpec& model) {
  const ParamCount c = count_params(model);
  return {{"name", model.name},
          {"model", model_keys(model)},
          {"params",
           {{"total", c.total},
            {"active", c.active},
            {"embedding", c.embedding},
            {"output_layer", c.output_layer},
            {"mtp", c.mtp}}},
          {"kv_cache_bytes_per_token_bf16", kv_cache_bytes_per_token(model, model.layers, 1, Dtype::bf16)}};
}

}  // namespace twinsim
