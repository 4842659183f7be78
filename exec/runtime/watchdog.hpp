#pragma once
// A rank's watchdog. MPI collectives have no timeout: when one rank of a job stops (a
// SIGSTOP, a hung kernel, a livelocked filesystem) or dies without mpirun noticing, the
// others wait in their next collective forever. Each rank therefore runs a thread that
// watches the rank's progress (every op it begins, exec/model/model_context, and every
// step) and, after `timeout_s` without any, prints which rank stalled where and ends the
// process;
// mpirun then ends the job (PyTorch's NCCL watchdog, TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC, does
// the same for a stuck collective). Checkpoints are written whole (temporary file, then
// rename), so the job resumes from the last complete step.
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string_view>
#include <thread>

namespace twinsim::exec {

// Records progress from the rank's own thread: it is now at op `what` (kept for the
// message) / starting step `step`. Cheap; a no-op while no watchdog runs.
void watchdog_progress(std::string_view what);
void watchdog_step(int step);

class Watchdog {
 public:
  // Starts watching; timeout_s <= 0 watches nothing. Throws std::invalid_argument for a
  // non-finite timeout.
  Watchdog(int world_rank, double timeout_s);
  ~Watchdog();  // stops the thread
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

 private:
  void watch();

  int rank_;
  double timeout_s_;
  std::mutex mutex_;
  std::condition_variable stop_signal_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace twinsim::exec
