#include "sim/cost/collective_sweep.hpp"

#include <stdexcept>

namespace twinsim {

std::vector<SweepRow> collective_sweep(const ClusterSpec& cluster, CollectiveOp c, const GroupLayout& group,
                                       double min_bytes, double max_bytes, double factor) {
  if (min_bytes <= 0 || max_bytes < min_bytes || factor <= 1)
    throw std::invalid_argument("collective sweep needs 0 < min_bytes <= max_bytes and factor > 1");
  const int bus_ranks = c == CollectiveOp::send_recv ? 2 : group.ranks;
  std::vector<SweepRow> rows;
  for (double bytes = min_bytes; bytes <= max_bytes; bytes *= factor) {
    const CollectiveCost cost = collective_cost(cluster, c, group, bytes);
    SweepRow row;
    row.bytes = bytes;
    row.time_s = cost.time_s();
    row.algbw_GBps = row.time_s > 0 ? bytes / row.time_s / 1e9 : 0;
    row.busbw_GBps = row.algbw_GBps * bus_bandwidth_factor(c, bus_ranks);
    row.algorithm = cost.algorithm;
    row.protocol = cost.protocol;
    row.measured = cost.measured;
    row.extrapolated = cost.extrapolated;
    rows.push_back(row);
  }
  return rows;
}

}  // namespace twinsim
