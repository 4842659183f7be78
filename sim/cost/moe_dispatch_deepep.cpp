#include "sim/cost/moe_dispatch_deepep.hpp"

#include <algorithm>

namespace twinsim {

namespace {

// DeepEP's normal kernels on 8 H100s (NVLink 4, 450 GB/s a direction) at Megatron's 20 SMs (10
// channels), bf16, 4096 tokens of hidden 7168, top-8 of 32 experts: dispatch 328.97 GB/s
// (1.0045 ms), combine 287.14 GB/s (1.1552 ms), received bytes over time (tile-ai/tilescale
// PR #40, github.com/tile-ai/tilescale/pull/40, "DeepEP" row; the harness:
// examples/distributed/deepseek_deepep/intranode/example_intranode.py). Held out: 8 H20s (the same
// NVLink) at 24 SMs, bf16 dispatch 344.45, combine 332.57 GB/s (deepseek-ai/DeepEP issue #138).
constexpr double kH100DispatchBps = 328.97e9;
constexpr double kH100CombineBps = 287.14e9;
// Where NVLink binds: on H800s (NVLink 200 GB/s a direction) DeepEP's README measures 153 GB/s
// dispatch, 158 combine, at 8 ranks ("~160 GB/s NVLink maximum"; deepseek-ai/DeepEP
// docs/legacy.md, "Normal kernels with NVLink and RDMA forwarding"): fractions of the link.
constexpr double kH800DispatchLinkShare = 153.0 / 200.0;
constexpr double kH800CombineLinkShare = 158.0 / 200.0;

// A DeepEP kernel beside a GEMM: an 8192-square bf16 GEMM of 670.4 us and a DeepEP dispatch of
// 1050.1 us alone took 1176.3 us together on a B200 (148 SMs, DeepEP's 64; tile-ai/tilescale
// examples/distributed/deepep_v2/README.md, "Overlap"). With the GEMM slowed by 148/84 for
// the SMs the kernel holds, the dispatch ends first at 1050.1 s, the GEMM's rest runs alone:
// 670.4 + 1050.1 s (1 - 84/148) = 1176.3 gives s = 1.11 (1.23 if the GEMM were not slowed).
// NCCL's send/recv beside a GEMM run 2x (ep_overlap.cpp): DeepEP's kernels keep their own SMs.
// That is DeepEP V2 on a B200; no measurement of V1 (Megatron's) beside a GEMM was found.
constexpr double kDeepEpSlowdownBesideGemm = 1.11;

}  // namespace

double deepep_rows_per_copy(const MoeSpec& moe, int ep_ranks) {
  if (ep_ranks <= 1 || moe.top_k <= 0 || moe.experts < ep_ranks) return 1.0;
  const int local = moe.experts / ep_ranks;  // experts a rank holds
  // P(none of the token's top_k distinct experts on a given rank) = C(E - local, k) / C(E, k)
  double missed = 1.0;
  for (int i = 0; i < moe.top_k; ++i)
    missed *= std::max(0.0, static_cast<double>(moe.experts - local - i) / (moe.experts - i));
  return ep_ranks * (1.0 - missed) / moe.top_k;  // the ranks reached, over the copies
}

double deepep_intranode_Bps(const ClusterSpec& cluster, DeepEpKernel kernel) {
  const bool dispatch = kernel == DeepEpKernel::dispatch;
  const double measured = dispatch ? kH100DispatchBps : kH100CombineBps;
  const double link = cluster.intra_node.bandwidth_Bps * (dispatch ? kH800DispatchLinkShare : kH800CombineLinkShare);
  return link > 0 ? std::min(measured, link) : measured;  // the slower of the kernel's rate and the link's
}

double deepep_intranode_s(const ClusterSpec& cluster, DeepEpKernel kernel, double bytes, const MoeSpec& moe,
                          int ep_ranks) {
  // the rows a rank receives, one per token and rank, at the kernel's rate
  return bytes * deepep_rows_per_copy(moe, ep_ranks) / deepep_intranode_Bps(cluster, kernel);
}

double deepep_compute_slowdown(const GpuSpec& gpu) {
  if (gpu.sms <= kDeepEpSms) return 1.0;
  return static_cast<double>(gpu.sms) / (gpu.sms - kDeepEpSms);  // the SMs left to the compute
}

double deepep_slowdown_beside_gemm() { return kDeepEpSlowdownBesideGemm; }

}  // namespace twinsim
