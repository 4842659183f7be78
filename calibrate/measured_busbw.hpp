#pragma once
// The collectives' measured times as the simulator reads them: a hardware file's
// `intra_node.measured_busbw` (SCENARIO.md; sim/cost/collective_cost.cpp, measured_collective).
// With it a group on the calibrated machine is priced at what the executor's call took there
// (nccl-tests busbw: time = bytes x bus factor / busbw). Without it the simulator prices the
// host's MPI with NCCL's GPU protocol model on top of the fitted curve, whose base latencies
// (LL 3.6, LL128 10, Simple 8.4 us: NVIDIA/nccl tuning.cc) the host never paid: a 4 KiB
// all-reduce on 2 ranks was priced 6.5 us against the 2.2 us calibrate measured (issue 61).
#include <string>
#include <vector>

#include "calibrate/comm_bench.hpp"

namespace twinsim::calibrate {

// The YAML block `measured_busbw:` at `indent`: every measured collective, each rank count
// its points by bytes ([bytes, busbw GB/s] of the points' medians); empty when no point has a time.
std::string measured_busbw_yaml(const std::vector<CommPoint>& points, const std::string& indent);

}  // namespace twinsim::calibrate
