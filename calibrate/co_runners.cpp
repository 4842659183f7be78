#include "calibrate/co_runners.hpp"

#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdexcept>

namespace twinsim::calibrate {

namespace {

// The CPUs this process may run on, in order.
std::vector<int> allowed_cpus(const cpu_set_t& mask) {
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &mask)) cpus.push_back(c);
  return cpus;
}

void pin_to(int cpu) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  sched_setaffinity(0, sizeof one, &one);  // best effort: unpinned, the figures still stand
}

}  // namespace

CoRunners::CoRunners(int ranks, const std::function<void()>& workload) {
  CPU_ZERO(&original_);
  sched_getaffinity(0, sizeof original_, &original_);
  const std::vector<int> cpus = allowed_cpus(original_);
  // mpirun binds rank i to the i-th core when there are enough (Open MPI's --bind-to core
  // for 2 ranks or fewer, as in a timing case): this process stands for rank 0, so it
  // runs where rank 0 will, on a core that may run slower than the others on a shared VM
  pinned_ = ranks > 1 && ranks <= static_cast<int>(cpus.size());
  for (int i = 1; i < ranks; ++i) {
    const pid_t pid = fork();
    if (pid < 0) throw std::runtime_error("calibrate: fork failed");
    if (pid == 0) {
      if (pinned_) pin_to(cpus[i]);
      for (;;) workload();
    }
    pids_.push_back(pid);
  }
  if (pinned_) pin_to(cpus[0]);
}

CoRunners::~CoRunners() {
  for (pid_t pid : pids_) kill(pid, SIGKILL);
  for (pid_t pid : pids_) waitpid(pid, nullptr, 0);
  if (pinned_) sched_setaffinity(0, sizeof original_, &original_);
}

}  // namespace twinsim::calibrate
