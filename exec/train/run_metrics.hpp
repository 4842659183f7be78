#pragma once
// `twinsim run --metrics-port P`: each rank serves its live metrics (exec/runtime/metrics.hpp)
// on port P + rank of --metrics-address (default 127.0.0.1) while the run goes, and keeps the
// same series in the run directory: OUT/metrics/rank-R.jsonl (one line per step) and
// OUT/metrics/rank-R.prom (the newest exposition), each file written whole after every step.
#include <filesystem>
#include <memory>
#include <optional>
#include <ostream>
#include <string>

#include "exec/runtime/metrics.hpp"
#include "exec/runtime/metrics_server.hpp"
#include "exec/runtime/process_groups.hpp"

namespace twinsim::exec {

struct MetricsOptions {
  int port = 0;                       // rank 0's port; rank r serves on port + r; 0: no metrics
  std::string address = "127.0.0.1";  // where the ports listen
  std::string dir;                    // the run directory (files under dir/metrics/); empty: none
};

class RunMetrics {
 public:
  // Starts this rank's server (throws when it cannot listen) and says where, on `notes`.
  // With options.port 0 it does nothing, and neither does after_step.
  RunMetrics(const MetricsOptions& options, ProcessGroups& groups, std::ostream& notes);
  void after_step(int step, double step_s, double loss, const MemoryStats& memory);

 private:
  std::optional<MetricsTracker> tracker_;
  MetricsBoard board_;
  std::unique_ptr<MetricsServer> server_;
  std::filesystem::path jsonl_, prom_;
  std::string series_;  // every step's line so far
};

}  // namespace twinsim::exec
