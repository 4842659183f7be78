#pragma once
// Fitting a node type's network efficiency by message size to nccl-tests all-reduce run
// across nodes (hardware/catalog/README.md, "Node file"): the line rate stays the
// datasheet's, the per-step latency the node file's; the curve says what fraction of the
// line rate a message of each size gets (EFA stays further below it at mid sizes than
// InfiniBand). Half the sizes fit, the other half judge.
#include <string>
#include <vector>

#include "hardware/cluster_spec.hpp"
#include "sim/validate/error_stats.hpp"

namespace twinsim {

struct MeasuredAllReduce {
  double bytes = 0, time_s = 0;
};

// An nccl-tests table as CSV with a header: `size_bytes` and the out-of-place time
// (`oop_time_us` or `time_us`), or only `busbw_gbps` (time = 2(n-1)/n x bytes / busbw over
// `ranks`). `where` keeps the rows whose column equals the value ("run=p5_slurm"; empty:
// all). Sizes below `min_bytes` are dropped (latency, not bandwidth, sets their time), and
// so is the 0-byte row nccl-tests prints when its sweep starts at 0.
// Throws std::runtime_error naming the file, line and column of a cell that is not a
// number above 0, a row of the wrong width, a size given twice, or what is missing.
std::vector<MeasuredAllReduce> read_allreduce_csv(const std::string& path, int ranks, const std::string& where,
                                                  double min_bytes);

struct NetworkFitReport {
  double latency_s = 0;      // the node's per-step latency the curve was fitted with
  int latency_sizes = 0;     // sizes the latency was fitted to (0: the node's own latency)
  std::vector<EfficiencyPoint> curve;  // [bytes, fraction of the line rate], the fitted sizes
  ErrorSummary fit, held_out;                // time errors with the curve
  ErrorSummary fit_before, held_out_before;  // with the node's efficiency as it stands
};

// The per-step network latency (LinkSpec::latency_s, the Simple protocol's; NCCL's other
// protocols scale it) that makes the predicted all-reduce of the rows match the measured
// times at their median: bisection on [0, 10 ms] (the time rises with it). For the smallest
// sizes, where the latency, not the bandwidth, sets the time.
double fit_network_latency_s(const ClusterSpec& cluster, int ranks, const std::vector<MeasuredAllReduce>& rows);

// Rows alternate fit / held out by size order (`fit_even`: the 1st, 3rd, ... fit). For each
// fitted size, the flat network efficiency whose predicted all-reduce time over `ranks`
// (packed on cluster's nodes) equals the measured one, found by bisection in [0.02, 1];
// 1 where even the line rate is too slow (another link or the latency sets the time).
NetworkFitReport fit_network_efficiency(const ClusterSpec& cluster, int ranks,
                                        const std::vector<MeasuredAllReduce>& rows, bool fit_even);

// `twinsim fit-network`: the table's rows from `min_bytes` fit and judge the efficiency; with
// latency_max_bytes > 0 the latency is fitted first to the sizes in [latency_min_bytes,
// latency_max_bytes]. Throws std::runtime_error for a table or range without rows.
struct NetworkFitRequest {
  std::string path, where;
  int ranks = 0;
  double min_bytes = 1048576;
  bool fit_even = true;
  double latency_min_bytes = 0, latency_max_bytes = 0;
};
NetworkFitReport fit_network(ClusterSpec cluster, const NetworkFitRequest& request);

}  // namespace twinsim
