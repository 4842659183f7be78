#include "sim/cost/moe_dispatch.hpp"

#include <algorithm>
#include <cmath>

namespace twinsim {

double moe_dispatch_bytes(double bytes, const MoeSpec& moe, const GroupLayout& ep) {
  const int nodes = ep.nodes();
  if (moe.groups <= 0 || moe.top_groups <= 0 || nodes <= 1 || moe.top_k <= 0) return bytes;
  const double n = ep.ranks, r = ep.ranks_per_node, big_n = nodes;
  const double nodes_per_group = std::max(1.0, std::ceil(big_n / moe.groups));
  const double reached = std::min(big_n, moe.top_groups * nodes_per_group);  // M
  const double remote_limited = reached * (big_n - 1) / big_n;
  const double remote_copies = moe.top_k * (n - r) / n;
  return bytes * std::min(1.0, remote_limited / remote_copies);
}

}  // namespace twinsim
