#pragma once
// Everything one rank needs to know to build its piece of the transformer: the model
// (the simulator's ModelSpec), its tensor-parallel position, the micro-batch shape, and
// which layers its pipeline stage holds. Sizes here are per rank.
#include <cstdint>
#include <optional>

#include "models/dtype.hpp"
#include "models/lora.hpp"
#include "models/model_spec.hpp"
#include "models/plan.hpp"

namespace twinsim::exec {

struct TransformerConfig {
  ModelSpec model;
  int tp = 1;
  int tp_rank = 0;
  // expert parallelism: this rank holds experts [first_expert(), first_expert() +
  // local_experts()) of every MoE layer; the others' tokens come to it (moe_block.hpp)
  int ep = 1;
  int ep_rank = 0;
  // The routed experts' own TP degree (plan.expert_tp; 0: tp), which divides tp here: each
  // expert is split expert_tp ways, and the TP group's tp / expert_tp expert-TP groups
  // each route one slice of the (TP-replicated) tokens (moe_block.hpp, MoE parallel folding).
  int expert_tp = 0;
  bool sequence_parallel = false;
  bool flash_attention = true;
  Recompute recompute = Recompute::none;
  // plan.offload_activations_layers: the first N layers' saved tensors wait in CPU memory
  // between their forward and backward (Transformer Engine's activation offload; one stage)
  int offload_layers = 0;
  int micro_batch = 1;  // sequences per micro-batch
  int seq_len = 32;
  // pipeline stage: layers [first_layer, end_layer) and the ends it owns
  int first_layer = 0;
  int end_layer = 0;
  bool has_embedding = true;
  bool has_head = true;
  std::uint64_t seed = 1234;
  float init_std = 0.02f;    // GPT-2 / Megatron default (init_method_std)
  float norm_eps = 1e-5f;
  float rope_theta = 10000.0f;  // Su et al. 2021 RoFormer, Eq. 15
  // What weights, their grads and the activations are stored in: fp32, or bf16 / fp16 for
  // mixed precision (fp32 math inside every kernel; Micikevicius et al. 2018 §3).
  Dtype storage = Dtype::fp32;
  // training.lora: adapters beside the targeted linear layers, the rest frozen (lora_linear.hpp)
  std::optional<LoraSpec> lora;

  int tokens() const { return micro_batch * seq_len; }
  // tokens of the residual stream on this rank: split over TP with sequence parallelism
  int local_tokens() const { return sequence_parallel ? tokens() / tp : tokens(); }
  int hidden() const { return static_cast<int>(model.hidden); }
  int head_dim() const { return static_cast<int>(model.head_dim); }
  int local_heads() const { return static_cast<int>(model.heads) / tp; }
  int local_kv_heads() const { return static_cast<int>(model.kv_heads) / tp; }
  int local_q_width() const { return local_heads() * head_dim(); }
  int local_kv_width() const { return local_kv_heads() * head_dim(); }
  int local_ffn() const { return static_cast<int>(model.ffn_hidden) / tp; }
  int local_vocab() const { return static_cast<int>(model.vocab) / tp; }
  int vocab_start() const { return tp_rank * local_vocab(); }
  bool swiglu() const { return model.activation == Activation::swiglu; }
  bool rmsnorm() const { return model.norm == Norm::rmsnorm; }
  bool learned_positions() const { return model.position == Position::learned; }
  int layers() const { return end_layer - first_layer; }
  int local_experts() const { return model.moe ? model.moe->experts / ep : 0; }
  int first_expert() const { return ep_rank * local_experts(); }
  int etp() const { return expert_tp > 0 ? expert_tp : tp; }
  int expert_slices() const { return tp / etp(); }      // token slices of a TP group's experts
  int expert_slice() const { return tp_rank / etp(); }  // the slice this rank routes
};

// Throws std::invalid_argument naming the size and the degree that does not divide it.
void validate(const TransformerConfig& c);

}  // namespace twinsim::exec
