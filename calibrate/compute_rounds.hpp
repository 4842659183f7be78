#pragma once
// The compute sweeps of a calibration (memory-bound kernels, GEMM, attention), run
// `rounds` times over while `compute_ranks - 1` other processes run the same sweeps
// (co_runners.hpp: as in a timing case where every core runs a rank); each point keeps
// the median of its rounds (samples.hpp merge_rounds).
#include <ostream>

#include "calibrate/calibration.hpp"

namespace twinsim::calibrate {

// Fills c.memory, c.gemm and c.attention; says what it runs on `progress`.
void compute_sweeps(Calibration& c, const SweepOptions& o, int rounds, int compute_ranks, std::ostream& progress);

}  // namespace twinsim::calibrate
