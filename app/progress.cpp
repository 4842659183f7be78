#include "app/progress.hpp"

#include <algorithm>
#include <cmath>
#include <iostream>

#include <unistd.h>

namespace twinsim {

Progress::Progress(std::string command, int total_steps, bool quiet)
    : command_(std::move(command)), total_steps_(total_steps), quiet_(quiet || ::isatty(STDERR_FILENO) == 0) {}

void Progress::begin(const std::string& what) {
  ++begun_;
  total_steps_ = std::max(total_steps_, begun_);  // a step not foreseen (validate's extra runs)
  if (quiet_) return;
  std::cerr << command_ << ": [" << begun_ << " of " << total_steps_ << "] " << what;
  const int done = begun_ - 1;
  if (done > 0) {
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    const double left = elapsed / done * (total_steps_ - done);  // the steps done so far, on average
    std::cerr << ", about " << duration_words(left) << " left";
  }
  std::cerr << std::endl;
}

std::string duration_words(double seconds) {
  const long s = std::lround(std::max(0.0, seconds));
  if (s < 60) return std::to_string(s) + " s";
  if (s < 3600) return std::to_string(s / 60) + " min " + std::to_string(s % 60) + " s";
  return std::to_string(s / 3600) + " h " + std::to_string(s % 3600 / 60) + " min";
}

}  // namespace twinsim
