#pragma once
// Fault injection for the executor's fault tests, read from the environment so a test can
// break one rank of an mpirun job without a special build:
//   TWINSIM_FAULT_RANK=R   the rank that fails (unset: no fault)
//   TWINSIM_FAULT_STEP=K   at the start of step K (0-based; default 0)
//   TWINSIM_FAULT_KIND=    raise      (default) throws, as a bug or a bad input would
//                          kill       dies by SIGKILL, as an out-of-memory kill would
//                          stop       stops itself by SIGSTOP, as a hung rank would (the
//                                     others' watchdogs end the job, watchdog.hpp)
//                          checkpoint dies by SIGKILL while writing the checkpoint after
//                                     step K: after its temporary file, before the rename
#include <functional>
#include <string>

namespace twinsim::exec {

struct FaultPlan {
  int rank = -1;  // -1: none
  int step = 0;
  std::string kind = "raise";
  bool active_on(int world_rank) const { return rank == world_rank; }
};

// Throws std::invalid_argument for an unknown kind or a malformed number.
FaultPlan fault_plan_from_environment();

// Called by every rank at the start of each step: on the faulty rank and step, throws
// (kind raise), kills the process (kind kill) or stops it (kind stop), saying so on stderr
// first.
void inject_step_fault(const FaultPlan& plan, int world_rank, int step);

// Kind checkpoint: installs the checkpoint write hook that kills this rank while the
// checkpoint written after `plan.step` steps is half done.
void arm_checkpoint_fault(const FaultPlan& plan, int world_rank, std::function<int()> steps_done);

}  // namespace twinsim::exec
