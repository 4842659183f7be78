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
#include <string_view>
#include <vector>

#include "calibrate/compute_bench.hpp"
#include "calibrate/fit.hpp"

namespace twinsim::calibrate {

// The reuse points: bytes = the working set rotated through, seconds = one call.
inline constexpr const char* kGemmReuseKernel = "gemm_reuse";

// The reuse points of this process alone (no co-runner, compute_rounds.hpp reuse_sweeps_alone):
// a plan of one rank a machine has the cache to itself (issue 61: tiny-gpt's one-rank decode
// re-uses 12-15 MiB, on the knee of the curve measured beside another process).
inline constexpr const char* kGemmReuseAloneKernel = "gemm_reuse_alone";

// The rows points: the reuse GEMM's weights at other row counts (bytes = the call's A + W + C).
inline constexpr const char* kGemmRowsKernel = "gemm_rows";

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
// fitted largest set's (cold), smallest set first. Empty with fewer than two points. `kernel`:
// whose points (kGemmReuseKernel, beside the co-runners; kGemmReuseAloneKernel, alone).
std::vector<CurvePoint> reuse_time_curve(const std::vector<MemoryPoint>& reuse_points,
                                         std::string_view kernel = kGemmReuseKernel);

// The file's gemm_rows_time curve: the "gemm_rows" points' times over the 4-row one (the reuse
// sweep's rows), by rows, fewest first. Empty without a 4-row point. A decode's experts run
// more rows than the reuse GEMM: tiny-moe's EP-2 routed experts 8 a call where the shared
// expert runs 4, and 8 rows ran 1.4x the 4-row time warm, 1.05-1.3x rotated through 11 MiB
// (the executor's linear_forward, 2-vCPU EPYC, 2026-12-07); a 1-row call takes Eigen's
// matrix-vector path, 0.2-0.3x.
std::vector<CurvePoint> rows_time_curve(const std::vector<MemoryPoint>& points);

// The "gemm_rows" points: the reuse GEMM's 1 MiB weights at 1, 2, 4, 8 and 16 rows (4 in
// quick), rotated through 4 of them (4 MiB: the reuse curve's warm level), the rows taking
// turns within each of `o.repeats` repeats so that a slow spell falls on all of them.
std::vector<MemoryPoint> rows_points(const SweepOptions& o);

// The reuse points' schedule: slot k of `slot_s` seconds from `origin_s` (steady clock) runs
// working set k mod (number of sets), so each repeat starts on a slot and has room for its
// warm-up. The other ranks run the same sweep on the same schedule, out of step (each on the
// set it has reached). Running them on the same set at the same time, as a decode's ranks do,
// was tried (issue 61, 2-vCPU EPYC): the 12-16 MiB knee still moved 0.3-0.5 between sweeps, and
// sat at smaller sets (the two ranks' sets share the L3), pricing five of six serving judges
// the wrong way against validate's measured TPOT; so it is not kept.
struct ReusePace {
  double origin_s = 0;
  double slot_s = 0;
};
// A slot is this many times a repeat's `min_repeat_s`: room for the warm-up rotation (64
// matrices of 1 MiB, about 10 ms out of cache) before the calls.
inline constexpr double kReuseSlotsPerRepeat = 1.5;
// A schedule starting now.
ReusePace reuse_pace(const SweepOptions& o);

// The "gemm_reuse" points of the working sets `sets_MiB` on `pace`: `o.repeats` slots of each,
// the sets in turn from the next slot (whichever set it runs), each slot a warm-up rotation through
// its matrices then calls until 0.9 of it; a point's repeats are its slots.
std::vector<MemoryPoint> reuse_points(const std::vector<double>& sets_MiB, const SweepOptions& o,
                                      const ReusePace& pace);
// One round of the reuse sweep: the "gemm_reuse" points (reuse_points on `pace`, one set at a
// time, each set's repeats back to back), then the decode GEMMs' "gemm_cached" points rotating
// through half the warm working set those points found (capped at `o.cache_bytes`, the L3
// sysfs reports, when it reports one), then the rows points (rows_points).
std::vector<MemoryPoint> reuse_sweep(const SweepOptions& o, const ReusePace& pace);

}  // namespace twinsim::calibrate
