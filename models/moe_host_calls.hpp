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

// The calls of MoE row `op_name` (op_names.hpp) with `local_experts` experts on the GPU, or
// nothing for a row the census does not cover (not an MoE row, shared experts, expert bias).
// `quantized`: fp8 / fp4 GEMMs (the experts pad each expert's rows to the quantization's
// alignment and back, experts.py quantization_padding).
std::optional<RowHostCalls> megatron_core_moe_host_calls(std::string_view op_name, std::int64_t local_experts,
                                                         bool quantized);

}  // namespace twinsim
