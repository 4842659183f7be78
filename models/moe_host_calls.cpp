#include "models/moe_host_calls.hpp"

#include "models/op_names.hpp"

namespace twinsim {

// Each count's code: models/README.md, "Host calls of Megatron-core's MoE layer".
std::optional<RowHostCalls> megatron_core_moe_host_calls(std::string_view op_name, std::int64_t local_experts,
                                                         bool quantized) {
  const int experts = static_cast<int>(local_experts);
  const int padding = quantized ? 2 : 0;  // Fp8Padding / Fp8Unpadding of tokens and probs, each way
  RowHostCalls calls;
  if (op_name == op_names::kMoeRouter) {
    // gating GEMM; random logits (clone, normal_); fused top-k; fused aux-loss scores;
    // routing_map.sum; fused aux loss; the metrics tracker's add and division
    calls.fwd = {9, 1, 0};
    // gating dgrad, wgrad and cast; the fused kernels' backwards; the aux-loss scaler's
    // ones_like and mul; autograd's sum of the probs' two gradients
    calls.bwd = {7, 2, 0};
  } else if (op_name == op_names::kMoePermute) {
    // preprocess's seven reductions and copies, the token counts' all-gather over EP and its
    // buffer, the side stream's wait and event, four device-to-host copies, the fused permute
    // (TE's row-id map, 3 kernels, and the permute)
    calls.fwd = {18, 0, 1};
    calls.bwd = {2, 0, 0};  // the fused unpermute of the tokens' and probs' gradients
  } else if (op_name == op_names::kMoeDispatch) {
    calls.fwd = {0, 0, 2};  // tokens' and probs' all-to-alls
    calls.bwd = {0, 0, 2};
    calls.host_waits_before_fwd = true;
  } else if (op_name == op_names::kMoeSortChunks || op_name == op_names::kMoeUnsortChunks) {
    calls.fwd = {op_name == op_names::kMoeSortChunks ? 3 : 2, 0, 0};  // the fused sort (and its map)
    calls.bwd = {2, 0, 0};
  } else if (op_name == op_names::kMoeExpertsGateUp || op_name == op_names::kMoeExpertsFc1) {
    // padding, the input's split quantize, one GEMM per expert; backward: the gradient's
    // quantize, dgrad and wgrad per expert, the padding's backward
    calls.fwd = {1 + padding, experts, 0};
    calls.bwd = {1 + padding, 2 * experts, 0};
  } else if (op_name == op_names::kMoeExpertsAct) {
    calls.fwd = {2, 0, 0};  // the probs' fp32 cast, the weighted SwiGLU
    calls.bwd = {2, 0, 0};
  } else if (op_name == op_names::kMoeExpertsActClamp) {
    calls.fwd = {3, 0, 0};  // the two halves' clamps, their cat (chunk: views)
    // clamp_backward per half (a mask and the masked grad: 2 one-sided, 4 two-sided), the
    // chunk's backward cat
    calls.bwd = {7, 0, 0};
  } else if (op_name == op_names::kMoeExpertsBias) {
    calls.fwd = {2 * experts + 1, 0, 0};  // per local expert `b * p` and `t + ...`, the cat
    // per local expert the two broadcast products' grads (b's and p's), each a product and a
    // reduction; the two splits' backward cats (rows' and probs' grads)
    calls.bwd = {4 * experts + 2, 0, 0};
  } else if (op_name == op_names::kMoeExpertsDown || op_name == op_names::kMoeExpertsFc2) {
    calls.fwd = {1 + padding / 2, experts, 0};  // quantize, GEMMs, unpadding
    calls.bwd = {1 + padding / 2, 2 * experts, 0};
  } else if (op_name == op_names::kMoeExpertsPad || op_name == op_names::kMoeExpertsUnpad) {
    calls = {};  // their calls are the grouped GEMMs' rows' `padding` above
  } else if (op_name == op_names::kMoeCombine) {
    calls.fwd = {0, 0, 1};
    calls.bwd = {0, 0, 1};
  } else if (op_name == op_names::kMoeUnpermute) {
    calls.fwd = {1, 0, 0};  // the fused unpermute
    calls.bwd = {2, 0, 0};  // its backward: the tokens' and the probs' gradients
  } else {
    return std::nullopt;
  }
  return calls;
}

namespace {
bool starts_with(std::string_view name, std::string_view prefix) { return name.substr(0, prefix.size()) == prefix; }
}  // namespace

bool captured_in_graph(const CudaGraphScopes& scopes, std::string_view op_name) {
  if (scopes.attn && starts_with(op_name, "attn.")) return true;
  if (scopes.moe_router &&
      (op_name == op_names::kMlpNorm || op_name == op_names::kMoeRouter || starts_with(op_name, op_names::kMoeShared)))
    return true;
  return scopes.moe_preprocess && (op_name == op_names::kMoeCounts || op_name == op_names::kMoePermute);
}

std::optional<RowHostCalls> graph_replay_host_calls(const CudaGraphScopes& scopes, std::string_view op_name) {
  const std::string_view first = scopes.attn ? op_names::kAttnNorm : op_names::kMlpNorm;
  if (!scopes.any() || op_name != first) return std::nullopt;
  const int output_grads = scopes.moe_router ? 2 : 1;
  RowHostCalls calls;
  calls.fwd = {2, 0, 0};  // the input's copy, the replay
  calls.bwd = {output_grads + 1, 0, 0};
  return calls;
}

}  // namespace twinsim
