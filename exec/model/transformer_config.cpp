#include "exec/model/transformer_config.hpp"

#include <stdexcept>
#include <string>

namespace twinsim::exec {

namespace {
void require_divides(const char* what, std::int64_t value, const char* by, int degree) {
  if (degree < 1 || value % degree != 0)
    throw std::invalid_argument(std::string(what) + "=" + std::to_string(value) + " is not divisible by " +
                                by + "=" + std::to_string(degree));
}
// The mixture of experts moe_block.hpp runs: DeepSeekMoE's softmax router over top_k
// experts with optional shared experts, no biases, experts sharded by TP.
void validate_moe(const TransformerConfig& c) {
  const MoeSpec& moe = *c.model.moe;
  const auto refuse = [](const std::string& key, const std::string& why) {
    throw std::invalid_argument(key + ": " + why + "; the simulator prices this model, the executor cannot run it");
  };
  if (c.model.bias) refuse("model.bias", "the executor's experts and router have no biases");
  if (moe.router_bias) refuse("model.moe.router_bias", "the executor's router has no bias");
  if (moe.shared_expert_gate) refuse("model.moe.shared_expert_gate", "the executor's shared experts are ungated");
  if (moe.groups > 0) refuse("model.moe.groups", "the executor routes over all experts (no group-limited routing)");
  if (c.sequence_parallel) refuse("plan.sequence_parallel", "the executor's MoE layers run without sequence parallelism");
  require_divides("model.moe.experts", moe.experts, "ep", c.ep);
  require_divides("plan.tp", c.tp, "plan.expert_tp (the executor's expert TP groups lie inside a TP group)", c.etp());
  require_divides("model.moe.expert_ffn_hidden", moe.expert_ffn_hidden, "expert_tp", c.etp());
  require_divides("training.micro_batch * seq_len", c.tokens(), "tp / expert_tp (the experts' token slices)",
                  c.expert_slices());
  require_divides("model.moe.shared_experts * shared_expert_ffn_hidden", moe.shared_experts * moe.shared_width(), "tp",
                  c.tp);
}

// The multi-head latent attention mla_block.hpp runs: RoPE, RMSNorm, no biases, heads split
// by TP without sequence parallelism, flash or plain attention kept whole (no selective
// recomputation).
void validate_mla(const TransformerConfig& c) {
  const auto refuse = [](const std::string& key, const std::string& why) {
    throw std::invalid_argument(key + ": " + why + "; the simulator prices this model, the executor cannot run it");
  };
  if (c.model.bias) refuse("model.bias", "the executor's latent attention has no biases");
  if (c.model.position != Position::rope) refuse("model.position", "latent attention needs rope");
  if (!c.rmsnorm()) refuse("model.norm", "the executor's latent attention runs with rmsnorm");
  if (c.sequence_parallel) refuse("plan.sequence_parallel", "the executor's latent attention runs without it");
  if (c.recompute == Recompute::selective)
    refuse("plan.recompute=selective", "the executor's latent attention keeps its core (use none or full)");
  if (c.model.mla->qk_rope_head_dim % 2 != 0) refuse("model.mla.qk_rope_head_dim", "must be even for RoPE");
}

}  // namespace

void validate(const TransformerConfig& c) {
  require_divides("model.heads", c.model.heads, "tp", c.tp);
  // the executor shards K/V heads too; replicating them (kv_heads < tp) is not implemented
  require_divides("model.kv_heads", c.model.kv_heads, "tp", c.tp);
  require_divides("model.ffn_hidden", c.model.ffn_hidden, "tp", c.tp);
  require_divides("model.vocab", c.model.vocab, "tp", c.tp);
  if (c.sequence_parallel) require_divides("micro_batch*seq_len", c.tokens(), "tp", c.tp);
  if (c.model.moe) validate_moe(c);
  if (c.recompute == Recompute::selective_op)
    throw std::invalid_argument("plan.recompute=selective_op: PyTorch's op-level checkpointing is the simulator's; "
                                "the executor runs none, selective or full");
  // architectures the simulator prices but the executor's kernels do not implement yet
  const auto refuse = [](const std::string& key) {
    throw std::invalid_argument(key + ": the executor runs standard multi-head/grouped-query attention with "
                                      "gelu or swiglu MLPs; the simulator prices this model, the executor cannot run it");
  };
  if (c.model.mla) validate_mla(c);
  if (c.model.activation == Activation::geglu) refuse("model.activation=geglu");
  if (c.model.qk_norm) refuse("model.qk_norm");
  if (c.model.qkv_bias && !c.model.bias) refuse("model.qkv_bias");
  if (c.model.sandwich_norm) refuse("model.sandwich_norm");
  if (c.model.attention_sinks) refuse("model.attention_sinks");
  if (c.model.activation_clamp > 0) refuse("model.activation_clamp");
  if (c.model.sliding_window > 0) refuse("model.sliding_window");
  if (c.model.mtp_layers > 0) refuse("model.mtp_layers");
  if (c.learned_positions() && c.seq_len > c.model.max_seq_len)
    throw std::invalid_argument("seq_len=" + std::to_string(c.seq_len) + " exceeds model.max_seq_len=" +
                                std::to_string(c.model.max_seq_len));
  if (c.first_layer < 0 || c.end_layer < c.first_layer || c.end_layer > c.model.layers)
    throw std::invalid_argument("stage layers [" + std::to_string(c.first_layer) + ", " +
                                std::to_string(c.end_layer) + ") outside the model");
}

}  // namespace twinsim::exec
