#pragma once
// Progress of a long command (validate, calibrate) on stderr: "NAME: [i of N] WHAT, about
// T left", T from the mean time of the steps done so far. Quiet when stderr is not a
// terminal (logs, CI) or when the command prints JSON.
#include <chrono>
#include <string>

namespace twinsim {

class Progress {
 public:
  Progress(std::string command, int total_steps, bool quiet);
  // Step i+1 of N begins: prints its line (and the estimate once one step has ended).
  void begin(const std::string& what);

 private:
  std::string command_;
  int total_steps_;
  int begun_ = 0;
  bool quiet_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

// "45 s", "3 min 20 s", "1 h 5 min".
std::string duration_words(double seconds);

}  // namespace twinsim
