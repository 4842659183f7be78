#include "calibrate/compute_rounds.hpp"

#include <stdexcept>
#include <string>
#include <vector>

#include "calibrate/cache_reuse.hpp"
#include "calibrate/co_runners.hpp"

namespace twinsim::calibrate {

namespace {

// Folds round `k` (from 1) of a sweep into `all`, `per_point` keeping every round's
// stats: every sweep lists the same points in the same order, and a point keeps the
// median of its rounds (merge_rounds).
template <typename Point>
void merge_round(std::vector<Point>& all, std::vector<std::vector<Stats>>& per_point, const std::vector<Point>& round,
                 int k) {
  if (k == 1) {
    all = round;
    per_point.assign(round.size(), {});
  }
  if (round.size() != all.size()) throw std::logic_error("calibrate: a sweep's rounds differ in points");
  for (std::size_t i = 0; i < round.size(); ++i) {
    per_point[i].push_back(round[i].seconds);
    all[i].seconds = merge_rounds(per_point[i]);
  }
}

// `rounds` runs of `sweep`, announced to `started` as `what` (and the round), each point the
// median of its rounds (merge_round).
template <typename Sweep>
std::vector<MemoryPoint> merged_rounds(int rounds, const std::string& what, const SweepStarted& started,
                                       const Sweep& sweep) {
  std::vector<MemoryPoint> merged;
  std::vector<std::vector<Stats>> per_point;
  for (int k = 1; k <= rounds; ++k) {
    const std::string round = rounds > 1 ? " (round " + std::to_string(k) + " of " + std::to_string(rounds) + ")" : "";
    started(what + round);
    merge_round(merged, per_point, sweep(), k);
  }
  return merged;
}

}  // namespace

void reuse_sweeps(Calibration& c, const SweepOptions& o, int rounds, int compute_ranks, const SweepStarted& started) {
  const ReusePace pace = reuse_pace(o);  // the other ranks run the same sweep on it, out of step
  const CoRunners others(compute_ranks, [o, pace] { reuse_sweep(o, pace); });
  const std::vector<MemoryPoint> merged =
      merged_rounds(rounds, "decode GEMMs re-using their weights, working sets of 1-64 MiB", started,
                    [&o, &pace] { return reuse_sweep(o, pace); });
  c.memory.insert(c.memory.end(), merged.begin(), merged.end());
  c.reuse_ranks = compute_ranks;  // this process and the co-runners, each re-using its own sets
}

void reuse_sweeps_alone(Calibration& c, const SweepOptions& o, int rounds, const SweepStarted& started) {
  const ReusePace pace = reuse_pace(o);
  const std::vector<double> sets = reuse_working_sets_MiB(o.quick);
  std::vector<MemoryPoint> merged = merged_rounds(rounds, "decode GEMMs re-using their weights, this process alone",
                                                  started, [&] { return reuse_points(sets, o, pace); });
  for (MemoryPoint& p : merged) p.kernel = kGemmReuseAloneKernel;
  c.memory.insert(c.memory.end(), merged.begin(), merged.end());
}

void compute_sweeps(Calibration& c, const SweepOptions& o, int rounds, int compute_ranks, const SweepStarted& started) {
  std::vector<std::vector<Stats>> memory_rounds, gemm_rounds, attention_rounds;
  {
    // The other processes loop over all three sweeps. Running beside each the sweep being
    // timed was tried (issue 61) and not kept: no steadier median on a 2-vCPU EPYC, and the
    // GEMM-from-L3 curve came out 3x higher, single-rank decode predicted 28-30% too fast
    // (its 12.5 MiB of weights then counted as cached: the sysfs L3 was the cache's size).
    const CoRunners others(compute_ranks, [&o] {
      memory_sweep(o);
      gemm_sweep(o);
      attention_sweep(o);
    });
    for (int k = 1; k <= rounds; ++k) {
      const std::string round =
          rounds > 1 ? " (round " + std::to_string(k) + " of " + std::to_string(rounds) + ")" : "";
      started("memory-bound kernels (" + std::to_string(compute_ranks - 1) + " other processes running the same)" +
              round);
      merge_round(c.memory, memory_rounds, memory_sweep(o), k);
      started("GEMM" + round);
      merge_round(c.gemm, gemm_rounds, gemm_sweep(o), k);
      started("attention" + round);
      merge_round(c.attention, attention_rounds, attention_sweep(o), k);
    }
  }
  reuse_sweeps(c, o, reuse_rounds(rounds), compute_ranks, started);
  // its co-runners have stopped: the same sets again for a plan of one rank a machine
  if (compute_ranks > 1) reuse_sweeps_alone(c, o, reuse_rounds(rounds), started);
}

}  // namespace twinsim::calibrate
