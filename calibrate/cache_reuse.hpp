#pragma once
// A serving decode runs the same projections pass after pass: on a CPU, weights that fit
// in what the cache leaves this rank stay there from one step to the next, and its
// few-row GEMMs run from the cache instead of DRAM (tiny-llama's TP-2 decode, 5.5 MiB of
// weights a rank: 4-row GEMMs at 15-18 GB/s re-used, 6.3 GB/s rotated through 33 MiB;
// this 2-vCPU EPYC, 2026-12-06). How much stays is this machine's, not the sysfs L3's:
// on a shared VM other guests hold part of it (11 MiB in rotation already ran at 7.7 GB/s
// here, against a 32 MiB L3). So it is measured: the same 4-row GEMM rotated through
// working sets of 1..64 MiB of weight matrices, while the other ranks do the same, as the
// ranks of a TP decode each re-use their own shard.
#include <vector>

#include "calibrate/compute_bench.hpp"
#include "calibrate/fit.hpp"

namespace twinsim::calibrate {

// The reuse points: bytes = the working set rotated through, seconds = one call.
inline constexpr const char* kGemmReuseKernel = "gemm_reuse";

// The working sets measured (MiB), smallest first; the last is out of any cache here.
std::vector<double> reuse_working_sets_MiB(bool quick);

// The working set at which a call's time is half-way, on a log scale, from the smallest
// set's (warm) to the largest's (cold): the first crossing walking up from the smallest,
// log time interpolated linearly in log bytes between the two sets around it. A pass below
// it runs nearer the warm time than the cold, so the simulator prices it at the cached
// curve ("gemm_cached"), above it at the cold one. The largest set when no set crosses (no
// cache effect to see); 0 with fewer than two points.
double warm_working_set_bytes(const std::vector<MemoryPoint>& reuse_points);

// The file's gemm_reuse_time curve: the sets' times fitted non-decreasing in the working set
// (isotonic_non_decreasing: a larger set cannot run warmer, a dip is noise), each over the
// fitted largest set's (cold), smallest set first. Empty with fewer than two points.
std::vector<CurvePoint> reuse_time_curve(const std::vector<MemoryPoint>& reuse_points);

// One round of the reuse sweep: the "gemm_reuse" points, then the decode GEMMs'
// "gemm_cached" points rotating through half the warm working set those points found
// (capped at `o.cache_bytes`, the L3 sysfs reports, when it reports one).
std::vector<MemoryPoint> reuse_sweep(const SweepOptions& o);

}  // namespace twinsim::calibrate
