#pragma once
// Ranks of a timing case share this machine's caches and memory bandwidth: every core runs
// one. So a benchmark is timed while `ranks - 1` forked processes run a workload too,
// which makes its figures those of one rank among `ranks` busy ones. Where there is a core
// for each, every process is pinned to one, rank 0 (this process) to the first, as mpirun
// binds a timing case's ranks.
#include <sched.h>
#include <sys/types.h>

#include <functional>
#include <vector>

namespace twinsim::calibrate {

class CoRunners {
 public:
  // Forks ranks - 1 processes that call `workload` until this object is destroyed; pins
  // them and this process when the cores allow.
  CoRunners(int ranks, const std::function<void()>& workload);
  ~CoRunners();  // kills and reaps them, and unpins this process
  CoRunners(const CoRunners&) = delete;
  CoRunners& operator=(const CoRunners&) = delete;

 private:
  std::vector<pid_t> pids_;
  cpu_set_t original_;  // this process's CPUs before
  bool pinned_ = false;
};

}  // namespace twinsim::calibrate
