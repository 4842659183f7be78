#pragma once
// What sharing the machine's cores costs a rank: the same kernels timed alone (this
// process pinned to the first core, the others idle) and while every other core runs
// them too (co_runners.hpp), as the calibrated curves are taken. A plan that runs one rank
// on the machine gets the first; a plan with a rank on every core the second. On a VM
// whose cores share a physical core's units and caches (SMT siblings on the host, which
// the guest cannot see), a busy neighbour halves a GEMM's rate; on separate cores it
// costs a few percent of shared L3 and DRAM bandwidth.
#include <string>
#include <vector>

#include "calibrate/compute_bench.hpp"

namespace twinsim::calibrate {

struct SharingPoint {
  std::string name;  // the kernel and size, as the sweep lists it
  bool gemm = false;  // a GEMM's math (else a memory-bound kernel)
  Stats alone, shared;
  // how much faster alone: shared / alone, medians
  double speedup() const { return alone.median > 0 ? shared.median / alone.median : 1; }
};

struct CoreSharing {
  int busy_processes = 1;  // the processes of the shared timing (one per core: the curves')
  double gemm_speedup = 1;    // median speedup() of the GEMM points
  double memory_speedup = 1;  // median speedup() of the memory-bound points
  std::vector<SharingPoint> points;
};

// The quick sweeps' GEMMs and memory-bound kernels, alone and with `busy_processes - 1`
// others running the same sweep; `repeats` per point. busy_processes < 2: nothing to
// measure (speedups 1, no points).
CoreSharing measure_core_sharing(const SweepOptions& o, int busy_processes);

// The medians of the points' speedups by kind (the fit; separate for tests).
void fit_core_sharing(CoreSharing& sharing);

}  // namespace twinsim::calibrate
