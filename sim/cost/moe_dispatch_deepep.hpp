#pragma once
// DeepEP's normal (high-throughput) kernels in a node, as Megatron-core's flex dispatcher runs
// them (stack.moe_dispatcher: deepep; Megatron-LM megatron/core/transformer/moe/fused_a2a.py,
// token_dispatcher.py MoEFlexTokenDispatcher): the dispatch kernel sends each token once to
// each rank holding one of its experts (one row per token and rank, not per expert copy as
// the alltoall dispatcher's permuted rows), the combine kernel sends each such row back; each
// holds its SMs (Megatron-core's moe_deepep_num_sms, 20) for its whole run.
#include "hardware/cluster_spec.hpp"
#include "models/model_spec.hpp"

namespace twinsim {

enum class DeepEpKernel { dispatch, combine };

// The SMs DeepEP's normal kernels hold: Megatron-core TransformerConfig.moe_deepep_num_sms,
// default 20 ("Number of SMs to use for DeepEP"), which Megatron-Bridge's recipes keep.
inline constexpr int kDeepEpSms = 20;

// Of an all-to-all's rows per token and expert copy (top_k a token), the rows DeepEP moves:
// the ranks a token's top_k distinct experts reach, over top_k, for uniform routing over
// `ep_ranks` ranks of experts / ep_ranks experts each (1 for one rank or no routing).
double deepep_rows_per_copy(const MoeSpec& moe, int ep_ranks);

// The rate of one DeepEP kernel in a node, the bytes a rank receives (its own rows included,
// DeepEP tests/test_intranode.py's accounting) a second: the H100 rate at 20 SMs where the
// node's NVLink does not bind it lower (moe_dispatch_deepep.cpp gives the figures).
double deepep_intranode_Bps(const ClusterSpec& cluster, DeepEpKernel kernel);

// Seconds of one DeepEP kernel in a node for an all-to-all whose payload, as the op list counts
// it (rows per token and expert copy), is `bytes`.
double deepep_intranode_s(const ClusterSpec& cluster, DeepEpKernel kernel, double bytes, const MoeSpec& moe,
                          int ep_ranks);

// How many times slower the compute runs beside a DeepEP kernel: the GPU's SMs over those
// the kernel leaves (1 where the SM count is unknown).
double deepep_compute_slowdown(const GpuSpec& gpu);

// How many times slower a DeepEP kernel runs beside a GEMM than alone (moe_dispatch_deepep.cpp).
double deepep_slowdown_beside_gemm();

}  // namespace twinsim
