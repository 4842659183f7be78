#pragma once
// Ranks of a timing case share this machine's caches and memory bandwidth: every core runs
// one. So a benchmark is timed while `ranks - 1` forked processes run a workload too,
// which makes its figures those of one rank among `ranks` busy ones.
#include <sys/types.h>

#include <functional>
#include <vector>

namespace twinsim::calibrate {

class CoRunners {
 public:
  // Forks ranks - 1 processes that call `workload` until this object is destroyed.
  CoRunners(int ranks, const std::function<void()>& workload);
  ~CoRunners();  // kills and reaps them
  CoRunners(const CoRunners&) = delete;
  CoRunners& operator=(const CoRunners&) = delete;

 private:
  std::vector<pid_t> pids_;
};

}  // namespace twinsim::calibrate
