#pragma once
// The architecture of a transformer language model: the figures a paper's
// hyperparameter table gives. Everything else (parameter counts, FLOPs, activation
// sizes) is derived from these, never stored.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace twinsim {

// gelu: two FFN matrices; swiglu (SiLU-gated, Llama) and geglu (GeLU-gated, Gemma): three.
enum class Activation { gelu, swiglu, geglu };
enum class Norm { layernorm, rmsnorm };
enum class Position { learned, rope };
// RoPE's frequency scaling as config.json's rope_scaling.rope_type names it: the ones that change
// nothing priced (linear, llama3, dynamic...) read as none; yarn changes which kernel rotates Q
// and K (layer_ops.cpp, add_qkv).
enum class RopeScaling { none, yarn };

struct MoeSpec {
  int experts = 0;                     // routed experts per MoE layer
  int top_k = 0;                       // routed experts each token visits
  std::int64_t expert_ffn_hidden = 0;  // FFN width of one expert (routed or shared)
  int shared_experts = 0;              // experts every token visits (DeepSeekMoE)
  int dense_layers = 0;                // the first N layers keep a dense FFN
  std::int64_t shared_expert_ffn_hidden = 0;  // one shared expert's width; 0: expert_ffn_hidden
  bool router_bias = false;            // a bias per expert in the router (gpt-oss; DeepSeek-V3's
                                       // e_score_correction_bias)
  bool shared_expert_gate = false;     // a sigmoid gate [hidden -> 1] on the shared experts (Qwen2-MoE)
  // Tokens of the busiest expert over the mean (1: perfectly balanced routing). Expert GEMMs
  // and the all-to-all run at the busiest GPU's size, which sets the step's pace.
  double imbalance = 1.0;
  // Token dropping (GShard §2.2; Megatron-core moe_expert_capacity_factor): each expert takes at
  // most capacity_factor x the mean tokens, the rest dropped by the router before the dispatch;
  // 0: dropless. pad_to_capacity (moe_pad_expert_input_to_capacity): every expert padded to it.
  double capacity_factor = 0;
  bool pad_to_capacity = false;
  // Group-limited routing (DeepSeek-V2 §2.1.3 device-limited, V3 §2.1.2 node-limited): the
  // experts form `groups` equal groups and a token picks its top_k experts within its best
  // `top_groups` groups. 0: unlimited.
  int groups = 0, top_groups = 0;

  // The busiest expert's rows over the mean, as the experts and the all-to-all run them:
  // the imbalance, capped at the capacity where tokens are dropped, the capacity where padded.
  double busiest_over_mean() const {
    if (capacity_factor <= 0) return imbalance;
    return pad_to_capacity ? capacity_factor : (imbalance < capacity_factor ? imbalance : capacity_factor);
  }

  std::int64_t shared_width() const { return shared_expert_ffn_hidden > 0 ? shared_expert_ffn_hidden : expert_ffn_hidden; }
  // What one rank sends in the row-count exchange before an expert-parallel dispatch: a
  // 4-byte count per expert, its rows for each expert (the executor's moe_block.cpp `plan`,
  // an all-to-all of fp32 counts; Megatron-core's MoEAlltoAllTokenDispatcher exchanges them
  // too, then the tokens). Latency-bound, so a 4- or 8-byte count costs the same.
  std::int64_t counts_exchange_bytes() const { return static_cast<std::int64_t>(experts) * 4; }
};

// Multi-head latent attention (DeepSeek-V2, Liu et al. 2024, §2.1): K and V are rebuilt
// per head from a compressed latent c_KV, and a decoupled RoPE key is shared by all heads.
// The KV cache keeps only the latent and the RoPE key.
struct MlaSpec {
  std::int64_t q_lora_rank = 0;       // Q's low-rank bottleneck; 0: Q projected directly (V2-Lite)
  std::int64_t kv_lora_rank = 0;      // width of the latent c_KV
  std::int64_t qk_nope_head_dim = 0;  // per-head Q/K width without position
  std::int64_t qk_rope_head_dim = 0;  // the decoupled RoPE part of Q (per head) and K (shared)
  std::int64_t v_head_dim = 0;        // per-head V width
};

// Causal (query, key) pairs of queries at positions [first, first + count), each seeing at
// most `window` keys (0: all earlier ones): the sum over p of min(p + 1, window).
inline double causal_pairs(std::int64_t first, std::int64_t count, std::int64_t window) {
  const double a = static_cast<double>(first), n = static_cast<double>(count);
  const double full = n * a + n * (n + 1) / 2;  // sum of p + 1
  if (window <= 0 || first + count <= window) return full;
  const std::int64_t growing = std::max<std::int64_t>(0, std::min(first + count, window) - first);  // p + 1 <= window
  const double g = static_cast<double>(growing);
  return g * a + g * (g + 1) / 2 + (n - g) * static_cast<double>(window);
}

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
  RopeScaling rope_scaling = RopeScaling::none;  // with position rope: YaRN (gpt-oss, DeepSeek-V3)
  std::int64_t max_seq_len = 2048;  // rows of the learned position table
  bool tied_embeddings = true;
  bool bias = true;
  double dropout = 0.0;  // dropout probability; > 0 saves masks for the backward pass
  bool qkv_bias = false;       // Q, K, V biases even without `bias` (Qwen2)
  bool qk_norm = false;        // RMSNorm over each head's Q and K (Qwen3, Gemma 3)
  bool sandwich_norm = false;  // norms after attention and FFN too: four per layer (Gemma 2/3)
  bool attention_sinks = false;  // one learned logit per head (gpt-oss)
  // the gated activation's inputs clamped first (gpt-oss's swiglu_limit: gate <= 7, -7 <= up <= 7); 0: not
  double activation_clamp = 0;
  std::int64_t sliding_window = 0;  // keys a query sees in a windowed layer; 0: none
  int global_every = 0;             // with a window: every Nth layer attends globally; 0: none do
  int mtp_layers = 0;               // multi-token-prediction modules (DeepSeek-V3 §2.2)
  std::optional<MoeSpec> moe;
  std::optional<MlaSpec> mla;

  bool gated() const { return activation != Activation::gelu; }  // three FFN matrices
  // Widths of one head's Q/K and V: head_dim, or MLA's nope + rope and v_head_dim.
  std::int64_t qk_head_dim() const { return mla ? mla->qk_nope_head_dim + mla->qk_rope_head_dim : head_dim; }
  std::int64_t v_head_dim() const { return mla ? mla->v_head_dim : head_dim; }
  std::int64_t q_width() const { return heads * qk_head_dim(); }  // columns of Q
  std::int64_t v_width() const { return heads * v_head_dim(); }   // columns of the attention output
  std::int64_t kv_width() const { return kv_heads * head_dim; }  // columns of K (and of V), without MLA
  bool is_moe_layer(std::int64_t layer) const {
    return moe.has_value() && layer >= moe->dense_layers;
  }
  // Layer `layer` attends within the sliding window (Gemma 2: every other layer,
  // Gemma 3: five of six, Mistral 7B v0.1: all).
  bool is_windowed_layer(std::int64_t layer) const {
    return sliding_window > 0 && (global_every == 0 || (layer + 1) % global_every != 0);
  }
  // The attention span of a windowed layer over a causal sequence of `seq` tokens, as the
  // keys per query of a full seq x seq rectangle of the same cost: seq x (pairs in the
  // window) / (pairs of full causal attention), so that FLOPs counted on the rectangle (the
  // op list's convention) shrink as the kernel's work does. A global layer's span is seq.
  std::int64_t window_span(std::int64_t seq) const {
    if (sliding_window <= 0 || seq <= sliding_window) return seq;
    return static_cast<std::int64_t>(static_cast<double>(seq) * causal_pairs(0, seq, sliding_window) /
                                         causal_pairs(0, seq, 0) +
                                     0.5);
  }
  // Share of the layers of one kind (MoE or dense) that attend within the window. The
  // simulator prices one layer per kind, so a model that alternates windowed and global
  // layers (Gemma 2/3, gpt-oss) is priced at this mix of the two.
  double windowed_share(bool moe_layers) const { return windowed_share_of(moe_layers ? 1 : 0); }
  // ... and of all layers (the share of a token's KV bytes the windowed layers hold).
  double windowed_share() const { return windowed_share_of(-1); }

 private:
  // kind: 1 MoE layers, 0 dense ones, -1 all
  double windowed_share_of(int kind) const {
    if (sliding_window <= 0) return 0;
    std::int64_t of_kind = 0, windowed = 0;
    for (std::int64_t l = 0; l < layers; ++l)
      if (kind < 0 || is_moe_layer(l) == (kind == 1)) of_kind += 1, windowed += is_windowed_layer(l) ? 1 : 0;
    return of_kind > 0 ? static_cast<double>(windowed) / static_cast<double>(of_kind) : 0;
  }
};

// Names of the architecture enums as scenario files spell them (models/enums.cpp).
std::string_view to_string(Activation a);
std::string_view to_string(Norm n);
std::string_view to_string(Position p);
std::string_view to_string(RopeScaling r);

}  // namespace twinsim
