#pragma once
// The architecture of a transformer language model: the figures a paper's
// hyperparameter table gives. Everything else (parameter counts, FLOPs, activation
// sizes) is derived from these, never stored.
#include <cstdint>
#include <optional>
#include <string>

namespace twinsim {

enum class Activation { gelu, swiglu };
enum class Norm { layernorm, rmsnorm };
enum class Position { learned, rope };

struct MoeSpec {
  int experts = 0;                     // routed experts per MoE layer
  int top_k = 0;                       // routed experts each token visits
  std::int64_t expert_ffn_hidden = 0;  // FFN width of one expert (routed or shared)
  int shared_experts = 0;              // experts every token visits (DeepSeekMoE)
  int dense_layers = 0;                // the first N layers keep a dense FFN
};

struct ModelSpec {
  std::string name;
  std::int64_t layers = 0;
  std::int64_t hidden = 0;
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;     // == heads for multi-head attention; fewer for GQA/MQA
  std::int64_t head_dim = 0;     // usually hidden / heads
  std::int64_t ffn_hidden = 0;   // dense FFN width
  Activation activation = Activation::gelu;
  Norm norm = Norm::layernorm;
  std::int64_t vocab = 0;
  Position position = Position::learned;
  std::int64_t max_seq_len = 2048;  // rows of the learned position table
  bool tied_embeddings = true;
  bool bias = true;
  double dropout = 0.0;  // dropout probability; > 0 saves masks for the backward pass
  std::optional<MoeSpec> moe;

  std::int64_t q_width() const { return heads * head_dim; }    // columns of Q
  std::int64_t kv_width() const { return kv_heads * head_dim; }  // columns of K (and of V)
  bool is_moe_layer(std::int64_t layer) const {
    return moe.has_value() && layer >= moe->dense_layers;
  }
};

}  // namespace twinsim
