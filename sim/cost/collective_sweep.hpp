#pragma once
// A size sweep of one collective, in the columns nccl-tests prints (doc/PERFORMANCE.md):
// size S, time t, algbw = S / t, busbw = algbw x bus_bandwidth_factor.
#include <vector>

#include "sim/cost/collective_cost.hpp"

namespace twinsim {

struct SweepRow {
  double bytes = 0;
  double time_s = 0;
  double algbw_GBps = 0;   // GB = 1e9 bytes, as nccl-tests
  double busbw_GBps = 0;
  Algorithm algorithm = Algorithm::ring;
  Protocol protocol = Protocol::simple;
  bool measured = false;      // from the link's measured curve (algorithm/protocol then unused)
  bool extrapolated = false;  // outside the measured sizes or group sizes
};

// Sizes min_bytes, min_bytes x factor, ... up to max_bytes (nccl-tests -b, -e, -f).
std::vector<SweepRow> collective_sweep(const ClusterSpec& cluster, CollectiveOp c, const GroupLayout& group,
                                       double min_bytes = 8, double max_bytes = 8.0 * (1 << 30),
                                       double factor = 2);

}  // namespace twinsim
