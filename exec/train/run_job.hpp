#pragma once
// One rank's part of `twinsim run`: a scenario's training steps (or its inference batch)
// run for real over the job's MPI ranks, measured, with checkpoints, fault injection
// (fault_injection.hpp) and the rank watchdog (watchdog.hpp). The command parses flags and
// writes the files; this is everything between.
//
// A plan whose training state (memory_estimate.hpp) exceeds the capacity (memory_limit,
// else the scenario GPU's memory) is refused before anything is allocated unless `force`;
// the same capacity bounds the tracked allocator, whose failures name the memory category.
// checkpoint_dir saves every step (checkpoint_dir.hpp); resume continues from the newest
// complete checkpoint up to `steps` steps in all. A non-finite loss stops the run.
#include <cstdint>
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "exec/runtime/mpi_communicator.hpp"
#include "exec/train/run_metrics.hpp"
#include "scenario/scenario.hpp"

namespace twinsim::exec {

struct JobOptions {
  int steps = 3;
  int decode_rounds = 1;  // inference: the decode run this many times (InferenceConfig)
  std::uint64_t seed = 1234;
  float lr = 0;                   // 0: the scenario's training.optimizer.lr
  std::int64_t memory_limit = 0;  // bytes per rank; 0: the scenario GPU's memory
  bool force = false;             // run a plan predicted not to fit
  std::string checkpoint_dir;     // empty: no checkpoints
  bool resume = false;
  int keep = 1;                   // checkpoints kept: the newest N steps
  bool save_initial = false;      // also save step 0, the initial weights
  double watchdog_timeout_s = 60;  // multi-rank jobs: no progress this long ends the job; 0: off
  MetricsOptions metrics;          // live metrics while training (run_metrics.hpp); port 0: off
};

struct JobOutput {
  nlohmann::json report;  // measured.json (SCENARIO.md's report with measured values); rank 0 only
  nlohmann::json trace;   // the Chrome trace of every rank; rank 0 only
  std::string summary;    // one line for the user; rank 0 only
};

// Collective over `world` (its size must be the plan's world size). `progress` gets rank
// 0's per-step lines ("step 3: loss 5.1234567, 0.08 s"), `notes` warnings and notes on
// what the executor runs differently from the plan. Throws on a bad plan or
// option (std::invalid_argument, ScenarioError), a refused fit, a non-finite loss, a
// checkpoint that cannot be read or written.
JobOutput run_job(const Scenario& s, const JobOptions& options, MpiCommunicator& world, std::ostream& progress,
                  std::ostream& notes);

}  // namespace twinsim::exec
