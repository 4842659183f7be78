#pragma once
// Live metrics of one rank of `twinsim run` (--metrics-port): what operators watch on a
// real cluster, taken after every step. The run loop fills a RankMetrics from the step's
// wall time, the tracked allocator and each process group's communicator traffic
// (Communicator::traffic); a MetricsServer (metrics_server.hpp) serves the newest one in
// the Prometheus text format (exposition format 0.0.4), and the run directory keeps the
// same series, one JSON line per step.
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "exec/runtime/communicator.hpp"
#include "exec/runtime/allocator.hpp"

namespace twinsim::exec {

struct GroupTraffic {
  std::string group;        // tp, cp, dp, ep, pp, world
  std::int64_t bytes_sent = 0;  // since the run began (a ring's per-rank bytes, Communicator::Traffic)
  double busy_s = 0;            // time inside the group's calls since the run began
  double utilization = 0;       // share of the last step's wall time inside them
};

struct RankMetrics {
  int rank = 0;
  int step = -1;                    // the last step finished (from 0)
  std::int64_t steps_done = 0;      // steps this run finished
  double step_s = 0;                // the last step's wall time on this rank
  double loss = 0;
  double compute_utilization = 0;   // share of the last step outside communicator calls
  std::vector<std::pair<std::string, std::int64_t>> memory_bytes;       // per category, live now
  std::vector<std::pair<std::string, std::int64_t>> memory_peak_bytes;  // per category, since the last reset
  std::vector<GroupTraffic> groups;
};

// Follows one rank's communicators step by step: each step's share of time in each group
// is the growth of its busy time over the step's wall time.
class MetricsTracker {
 public:
  // `groups`: a name and a communicator per process group, each named once.
  MetricsTracker(int rank, std::vector<std::pair<std::string, const Communicator*>> groups);
  // The metrics after step `step`, which took `step_s` on this rank.
  RankMetrics after_step(int step, double step_s, double loss, const MemoryStats& memory);

 private:
  int rank_;
  std::int64_t steps_done_ = 0;
  std::vector<std::pair<std::string, const Communicator*>> groups_;
  std::vector<double> busy_before_;
};

// Prometheus text format: twinsim_step_seconds, twinsim_steps_total, twinsim_loss,
// twinsim_compute_utilization, twinsim_memory_bytes{category}, twinsim_memory_peak_bytes{category},
// twinsim_bytes_sent_total{group}, twinsim_link_utilization{group}, each labelled with the rank.
std::string prometheus_text(const RankMetrics& m);
// One line of the run directory's series.
nlohmann::json to_json(const RankMetrics& m);

// The newest metrics, handed from the run loop to the server's thread.
class MetricsBoard {
 public:
  void publish(const RankMetrics& m);
  std::string text() const;  // the newest, in the Prometheus format; before the first step: the rank only

 private:
  mutable std::mutex mutex_;
  std::string text_;
};

}  // namespace twinsim::exec
