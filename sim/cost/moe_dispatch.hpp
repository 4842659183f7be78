#pragma once
// The bytes an MoE dispatch (or combine) all-to-all puts on the network when routing is
// group-limited (DeepSeek-V3 §2.1.2, §3.2.2: each token reaches at most M nodes, crossing
// InfiniBand once per node and fanning out over NVLink inside it, as DeepEP does).
#include "models/model_spec.hpp"
#include "sim/cost/collective_cost.hpp"

namespace twinsim {

// `bytes`: the all-to-all's payload as the op list gives it (tokens x top_k x hidden);
// `ep`: the expert-parallel group. Unlimited routing, or a group inside one node: `bytes`.
// Otherwise the token reaches M = min(N, top_groups x max(1, N / groups)) of the group's N
// nodes, M (N - 1) / N of them remote on average, against the top_k (n - r) / n remote copies
// the all-to-all cost model assumes: the payload scaled by their ratio (at most 1). The
// NVLink forwarding this adds inside a node is not priced (NVLink is several times a GPU's
// network share).
double moe_dispatch_bytes(double bytes, const MoeSpec& moe, const GroupLayout& ep);

}  // namespace twinsim
