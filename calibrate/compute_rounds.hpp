#pragma once
// The compute sweeps of a calibration (memory-bound kernels, GEMM, attention), run
// `rounds` times over while `compute_ranks - 1` other processes run the sweep being timed
// (co_runners.hpp: as in a timing case where every core runs a rank); each point keeps
// the median of its rounds (samples.hpp merge_rounds).
#include <functional>
#include <string>

#include "calibrate/calibration.hpp"

namespace twinsim::calibrate {

// Called with what each sweep runs as it begins (the command line prints it as "i of N").
using SweepStarted = std::function<void(const std::string& what)>;
// The reuse sweep's rounds for `rounds` of the others: it takes a few seconds a round, and
// its points are a decode's whole GEMM time (issue 61: one noisy point of 3 rounds moved
// tiny-llama's TP-2 decode by 20% between back-to-back calibrations).
inline constexpr int kReuseRoundsPerRound = 3;
constexpr int reuse_rounds(int rounds) { return kReuseRoundsPerRound * rounds; }
// How many sweeps compute_sweeps runs (and calls `started` for): with other processes, the
// reuse sweep's rounds once more alone (reuse_sweeps_alone).
constexpr int compute_sweep_count(int rounds, int compute_ranks) {
  return 3 * rounds + reuse_rounds(rounds) * (compute_ranks > 1 ? 2 : 1);
}
// The reuse sweep `rounds` times beside processes running the same sweep, as each rank of a TP
// decode re-uses its own shard; its points (each the median of its rounds) go into c.memory.
void reuse_sweeps(Calibration& c, const SweepOptions& o, int rounds, int compute_ranks, const SweepStarted& started);
// The reuse sweep's working sets `rounds` times with no other process running, as a plan of
// one rank a machine re-uses its weights: its points go into c.memory as kGemmReuseAloneKernel.
void reuse_sweeps_alone(Calibration& c, const SweepOptions& o, int rounds, const SweepStarted& started);
// Fills c.memory (with the reuse sweep's points: cache_reuse.hpp), c.gemm and c.attention.
void compute_sweeps(Calibration& c, const SweepOptions& o, int rounds, int compute_ranks, const SweepStarted& started);

}  // namespace twinsim::calibrate
