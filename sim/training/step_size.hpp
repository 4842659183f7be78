#pragma once
// How big a step's task graph will be, known before it is built: the tasks the step graph
// holds and the memory they take, so a command can refuse a step that would not fit in
// the machine (a million layers, 100k GPUs at full fidelity with 128 micro-batches each)
// with a message, instead of running for minutes into the OOM killer.
#include "scenario/scenario.hpp"
#include "sim/training/step_graph.hpp"

namespace twinsim {

struct StepSize {
  double tasks = 0;  // an upper estimate of the step graph's tasks
  double bytes = 0;  // the memory those tasks take while simulated
};

// Per simulated GPU (fast: one per stage; full: the replicas symmetry leaves, replica_symmetry.hpp;
// full per rank: every GPU), per micro-batch, each layer
// adds at most 6 tasks (forward, backward and their collectives), 2 more for ZeRO-3's
// gathers and reduce and 2 for a recompute, and a slot about 10 more (transfers, markers). Measured at 2026-11-25 (twinsim simulate, peak RSS
// over tasks): 120-130 bytes per task; 160 is kept as the estimate. Against the built graphs
// the task count is high by 1.2-2x (collectives are one task per group).
StepSize estimate_step_size(const Scenario& s, Fidelity fidelity);

}  // namespace twinsim
