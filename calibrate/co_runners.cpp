#include "calibrate/co_runners.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdexcept>

namespace twinsim::calibrate {

CoRunners::CoRunners(int ranks, const std::function<void()>& workload) {
  for (int i = 1; i < ranks; ++i) {
    const pid_t pid = fork();
    if (pid < 0) throw std::runtime_error("calibrate: fork failed");
    if (pid == 0)
      for (;;) workload();
    pids_.push_back(pid);
  }
}

CoRunners::~CoRunners() {
  for (pid_t pid : pids_) kill(pid, SIGKILL);
  for (pid_t pid : pids_) waitpid(pid, nullptr, 0);
}

}  // namespace twinsim::calibrate
