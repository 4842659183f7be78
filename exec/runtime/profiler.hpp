#pragma once
// Times the executor's ops under the simulator's op names, so that a measured op and a
// predicted one line up without guessing: "layer<N>.<op>.<pass>", with <op> from
// models/layer_ops.cpp (attn.norm, attn.qkv, attn.core, attn.proj, mlp.fc1, ...) and
// <pass> fwd | bwd_dgrad | bwd_wgrad | recompute. Wall time on std::chrono::steady_clock.
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "exec/runtime/communicator.hpp"

namespace twinsim::exec {

struct ProfileEvent {
  std::string name;
  double start_us = 0;  // since the profiler's origin
  double duration_us = 0;
};

struct OpTotal {
  double total_s = 0;
  std::int64_t count = 0;
};

class Profiler {
 public:
  using Clock = std::chrono::steady_clock;

  explicit Profiler(int rank = 0, bool enabled = true);

  // Restarts the time origin after a barrier, so every rank's track starts together
  // (ranks on one host share the monotonic clock; across hosts this is within the
  // barrier's latency).
  void align_origin(Communicator& comm);

  void record(std::string_view name, Clock::time_point start, Clock::time_point end);
  // Bracketing calls for an OpRecorder (exec/model/op_trace.hpp); ops may nest, and
  // end() closes the innermost open op, whose name must match.
  void begin(std::string_view name);
  void end(std::string_view name);
  bool enabled() const { return enabled_; }
  void set_enabled(bool on) { enabled_ = on; }
  int rank() const { return rank_; }

  const std::vector<ProfileEvent>& events() const { return events_; }
  const std::map<std::string, OpTotal, std::less<>>& totals() const { return totals_; }
  void clear();

  // {"rank": r, "ops": {name: {"count", "total_s", "mean_s"}}}
  nlohmann::json summary_json() const;

  // Collective over `comm`: gathers every rank's events and totals to comm rank 0.
  // Rank 0 gets the Chrome trace (one track per rank, pid 0, tid = rank) and the
  // summary of every rank; other ranks get null.
  nlohmann::json gather_chrome_trace(Communicator& comm) const;
  // {"ranks": [per-rank summary...], "ops": {name: {"count", "ranks", "mean_total_s",
  // "max_total_s"}}}: an op's totals over the ranks that ran it
  nlohmann::json gather_summary(Communicator& comm) const;
  // Collective: gathers and writes the trace / the summary as JSON files on comm rank 0.
  // Throws std::runtime_error naming the path when it cannot be written.
  void write_chrome_trace(Communicator& comm, const std::string& path) const;
  void write_summary(Communicator& comm, const std::string& path) const;

 private:
  int rank_;
  bool enabled_;
  Clock::time_point origin_;
  std::vector<std::pair<std::string, Clock::time_point>> open_;
  std::vector<ProfileEvent> events_;
  std::map<std::string, OpTotal, std::less<>> totals_;
};

// Chrome trace JSON ("traceEvents", complete events "ph":"X", microseconds) from the
// events of each rank (index = rank); loads in chrome://tracing and ui.perfetto.dev.
nlohmann::json chrome_trace(const std::vector<std::vector<ProfileEvent>>& events_per_rank);

// Times one op: `ProfileScope p(profiler, "layer3.attn.qkv.fwd");`
class ProfileScope {
 public:
  ProfileScope(Profiler& profiler, std::string name);
  ~ProfileScope();
  ProfileScope(const ProfileScope&) = delete;
  ProfileScope& operator=(const ProfileScope&) = delete;

 private:
  Profiler& profiler_;
  std::string name_;
  Profiler::Clock::time_point start_;
};

}  // namespace twinsim::exec
