#pragma once
// Parameter counts derived from the architecture (never stored in the catalog).
#include <cstdint>

#include "models/model_spec.hpp"

namespace twinsim {

struct LayerParams {
  std::int64_t attention = 0;   // Q, K, V, output projection (+ biases)
  std::int64_t norms = 0;       // the two norms of the layer
  std::int64_t dense_ffn = 0;   // dense FFN, 0 in an MoE layer
  std::int64_t router = 0;      // MoE gate
  std::int64_t routed_experts = 0;  // all routed experts of the layer
  std::int64_t shared_experts = 0;
  std::int64_t active_experts = 0;  // routed experts one token visits (top_k of them)

  std::int64_t total() const {
    return attention + norms + dense_ffn + router + routed_experts + shared_experts;
  }
  std::int64_t active() const {
    return attention + norms + dense_ffn + router + active_experts + shared_experts;
  }
};

struct ParamCount {
  std::int64_t total = 0;
  std::int64_t active = 0;           // per token: differs from total only for MoE
  std::int64_t embedding = 0;        // token table (+ learned positions)
  std::int64_t output_layer = 0;     // logits matrix; 0 when tied to the embedding
  std::int64_t final_norm = 0;
  // Multi-token-prediction modules (DeepSeek-V3), outside `total` as the paper counts
  // them (671B main model + 14B MTP on HF, whose MTP copy also stores the embedding and head).
  std::int64_t mtp = 0;
};

// Parameters of one of the model's norms over `width` values: scale (+ shift for LayerNorm
// with biases).
std::int64_t norm_params(const ModelSpec& m, std::int64_t width);

// Parameters of one FFN of width `ffn` (two matrices for GeLU, three for SwiGLU).
std::int64_t ffn_params(const ModelSpec& m, std::int64_t ffn);

// Parameters of transformer layer `layer` (0-based; MoE layers differ from dense ones).
LayerParams layer_params(const ModelSpec& m, std::int64_t layer);

// One multi-token-prediction module (DeepSeek-V3 §2.2), embedding and head shared.
std::int64_t mtp_module_params(const ModelSpec& m);

// Whole-model parameter count.
ParamCount count_params(const ModelSpec& m);

// What one pipeline stage holds: its transformer layers by kind, and whether it holds the
// embedding (the first stage) and the head (the last: final norm, MTP modules).
struct StagePieces {
  std::int64_t dense_layers = 0, moe_layers = 0;
  bool embedding = false, head = false;
};

// Parameters of a stage that every TP rank holds whole but whose gradients differ between
// the TP ranks, so Megatron-core sums them over the TP group at the step's end
// (distributed/finalize_model_grads.py _allreduce_layernorm_grads, after the DP reduce):
// with sequence parallelism those marked `sequence_parallel`, which each rank applies to
// its token shard (Korthikanti et al. 2022 §4.2.2): the norms (fused_layer_norm.py), the
// row-parallel linears' biases (RowParallelLinear), the MoE router's weight and bias
// (router.py), the shared experts' gate, MLA's duplicated down-projections and their norms
// (TELinear parallel_mode "duplicated"); learned positions too, added after the embedding's
// reduce-scatter as the op list and the executor do (models/head_ops.cpp); and, with or
// without it, the Q/K norms (summed by name). Routed experts' parameters are not counted.
std::int64_t tp_summed_grad_params(const ModelSpec& m, bool sequence_parallel, const StagePieces& stage);

}  // namespace twinsim
