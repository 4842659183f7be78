#pragma once
// The host-side calls Megatron-core's MoE layer issues per op row and pass, counted from its
// code (models/README.md, "Host calls of Megatron-core's MoE layer", has the file/line
// references): the recipes' settings, alltoall dispatcher, dropless, permute and router
// fusion, the load-balancing aux loss, TE's GroupedLinear under fp8. Counts only: the stack
// prices them (hardware/stack_spec.hpp host_calls_s).
#include <cstdint>
#include <optional>
#include <string_view>

namespace twinsim {

// Calls the host makes to issue one pass of one op row.
struct HostCalls {
  int torch_ops = 0;      // small PyTorch / TE ops through the dispatcher, one kernel launch or copy each
  int gemm_launches = 0;  // GEMMs (cuBLAS(Lt) calls), one per local expert in a grouped GEMM
  int collectives = 0;    // NCCL calls (the dispatcher's all-gather of the token counts, all-to-alls)
};

struct RowHostCalls {
  HostCalls fwd, bwd;
  // the forward's host waits for the device before issuing this row: the alltoall
  // dispatcher's device-to-host copy of the token counts is synchronised before the
  // dispatch's all-to-all (token_dispatcher.py, cuda_sync_point "before_ep_alltoall")
  bool host_waits_before_fwd = false;
};

// The parts of a layer Megatron-core captures in CUDA graphs with Transformer Engine
// (--cuda-graph-impl transformer_engine --cuda-graph-scope ..., Megatron-LM !1917 / #1920;
// moe_layer.py preprocess: the dispatcher's dispatch_preprocess, counts and permute):
// `attn` the attention half (its norm to its residual), `moe_router` the MLP half up to the
// router (the pre-MLP norm, the router; the shared experts too unless they overlap),
// `moe_preprocess` the dispatcher's preprocess (needs moe_router). One graph a layer: the
// scopes are contiguous from the first captured row.
struct CudaGraphScopes {
  bool attn = false;
  bool moe_router = false;
  bool moe_preprocess = false;
  bool any() const { return attn || moe_router || moe_preprocess; }
};

// Whether `scopes` capture row `op_name`: the graph's replay issues its kernels, so the
// row costs the host nothing of its own.
bool captured_in_graph(const CudaGraphScopes& scopes, std::string_view op_name);

// The host calls of replaying the layer's graph, carried by the graph's first row (nothing
// on any other row): TE's graphed callable (transformer_engine/pytorch/graph.py, Graphed at
// d0067d0, 1035-1097) copies its one input into the static buffer and replays the forward
// graph; backward, copies each output's gradient (the attention's one; the MoE graph's
// tokens and probs) and replays the backward graph.
std::optional<RowHostCalls> graph_replay_host_calls(const CudaGraphScopes& scopes, std::string_view op_name);

// The calls of MoE row `op_name` (op_names.hpp) with `local_experts` experts on the GPU, or
// nothing for a row the census does not cover (not an MoE row, shared experts).
// `quantized`: fp8 / fp4 GEMMs (the experts pad each expert's rows to the quantization's
// alignment and back, experts.py quantization_padding).
std::optional<RowHostCalls> megatron_core_moe_host_calls(std::string_view op_name, std::int64_t local_experts,
                                                         bool quantized);

}  // namespace twinsim
