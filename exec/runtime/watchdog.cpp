#include "exec/runtime/watchdog.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace twinsim::exec {

namespace {

// What the rank last reported, shared between its thread and the watchdog's.
struct Progress {
  std::atomic<bool> watched{false};
  std::atomic<unsigned long long> beats{0};
  std::atomic<int> step{-1};
  std::mutex mutex;  // guards last_op
  std::string last_op = "(none yet)";
};

Progress& progress() {
  static Progress p;
  return p;
}

}  // namespace

void watchdog_progress(std::string_view what) {
  Progress& p = progress();
  if (!p.watched.load(std::memory_order_relaxed)) return;
  {
    std::lock_guard lock(p.mutex);
    p.last_op.assign(what);
  }
  p.beats.fetch_add(1, std::memory_order_relaxed);
}

void watchdog_step(int step) {
  Progress& p = progress();
  p.step.store(step, std::memory_order_relaxed);
  p.beats.fetch_add(1, std::memory_order_relaxed);
}

Watchdog::Watchdog(int world_rank, double timeout_s) : rank_(world_rank), timeout_s_(timeout_s) {
  if (!std::isfinite(timeout_s))
    throw std::invalid_argument("--watchdog-timeout=" + std::to_string(timeout_s) + ": must be a finite number of seconds");
  if (timeout_s <= 0) return;
  progress().watched = true;
  thread_ = std::thread([this] { watch(); });
}

Watchdog::~Watchdog() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  stop_signal_.notify_all();
  thread_.join();
  progress().watched = false;
}

void Watchdog::watch() {
  using Clock = std::chrono::steady_clock;
  Progress& p = progress();
  const auto timeout = std::chrono::duration<double>(timeout_s_);
  const auto poll = std::min<std::chrono::duration<double>>(timeout / 4, std::chrono::seconds(1));
  unsigned long long seen = p.beats.load();
  Clock::time_point last_change = Clock::now();
  std::unique_lock lock(mutex_);
  while (!stop_signal_.wait_for(lock, poll, [this] { return stopping_; })) {
    const unsigned long long now_beats = p.beats.load();
    if (now_beats != seen) {
      seen = now_beats;
      last_change = Clock::now();
      continue;
    }
    if (Clock::now() - last_change < timeout) continue;
    std::string op;
    {
      std::lock_guard op_lock(p.mutex);
      op = p.last_op;
    }
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%g", timeout_s_);
    const int step = p.step.load();
    const std::string where = step >= 0 ? "in step " + std::to_string(step) : std::string("before the first step");
    const std::string line = "rank " + std::to_string(rank_) + ": no progress for " + seconds + " s " + where +
                             " (last op begun: " + op +
                             "): another rank is dead or stalled, or this one is stuck; ending the job "
                             "(--watchdog-timeout sets the limit, 0 turns it off)\n";
    std::fwrite(line.data(), 1, line.size(), stderr);
    std::fflush(stderr);
    // not MPI_Abort: MPI is not initialised for calls from this thread. A rank that exits
    // without MPI_Finalize makes mpirun end the job's other processes.
    std::_Exit(3);
  }
}

}  // namespace twinsim::exec
