#include "sim/validate/network_fit.hpp"

#include <fstream>
#include <map>
#include <stdexcept>

#include "sim/common/csv.hpp"
#include "sim/cost/collective_cost.hpp"

namespace twinsim {

namespace {

int column(const std::vector<std::string>& header, const std::string& name) {
  for (std::size_t i = 0; i < header.size(); ++i)
    if (header[i] == name) return static_cast<int>(i);
  return -1;
}

double predicted_s(const ClusterSpec& cluster, int ranks, double bytes) {
  return collective_time_s(cluster, CollectiveOp::all_reduce, packed_group(cluster, ranks), bytes);
}

ClusterSpec with_efficiency(ClusterSpec cluster, std::vector<EfficiencyPoint> curve) {
  cluster.inter_node.efficiency = std::move(curve);
  return cluster;
}

// The x in [lo, hi] where rising(x), which grows with x, crosses 0: bisection, 50 halvings;
// lo when rising(lo) is already at or above 0, hi when rising(hi) is still below.
template <class F>
double crossing(double lo, double hi, const F& rising) {
  if (rising(lo) >= 0) return lo;
  if (rising(hi) < 0) return hi;
  for (int i = 0; i < 50; ++i) {
    const double mid = 0.5 * (lo + hi);
    (rising(mid) < 0 ? lo : hi) = mid;
  }
  return hi;
}

// The flat efficiency in [0.02, 1] whose prediction matches the measured time (the time
// falls as the efficiency rises); 1 where even the line rate is too slow.
double matching_efficiency(const ClusterSpec& cluster, int ranks, const MeasuredAllReduce& m) {
  return crossing(0.02, 1.0, [&](double efficiency) {
    return m.time_s - predicted_s(with_efficiency(cluster, {{1.0, efficiency}}), ranks, m.bytes);
  });
}

// The median over the rows of predicted / measured - 1 with the given network latency.
double median_error(ClusterSpec cluster, double latency_s, int ranks, const std::vector<MeasuredAllReduce>& rows) {
  cluster.inter_node.latency_s = latency_s;
  std::vector<double> errors;
  for (const MeasuredAllReduce& m : rows) errors.push_back(predicted_s(cluster, ranks, m.bytes) / m.time_s - 1);
  return percentile(errors, 0.5);
}

}  // namespace

double fit_network_latency_s(const ClusterSpec& cluster, int ranks, const std::vector<MeasuredAllReduce>& rows) {
  if (rows.empty()) throw std::invalid_argument("fit_network_latency_s: no rows");
  return crossing(0.0, 10e-3, [&](double latency_s) { return median_error(cluster, latency_s, ranks, rows); });
}

std::vector<MeasuredAllReduce> read_allreduce_csv(const std::string& path, int ranks, const std::string& where,
                                                  double min_bytes) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot be read");
  std::string line;
  std::getline(in, line);
  const std::vector<std::string> header = split_csv_line(line);
  const int size = column(header, "size_bytes");
  int time = column(header, "oop_time_us");
  if (time < 0) time = column(header, "time_us");
  const int busbw = column(header, "busbw_gbps");
  if (size < 0 || (time < 0 && busbw < 0))
    throw std::runtime_error(path + ": needs the columns size_bytes and oop_time_us, time_us or busbw_gbps");
  int filter = -1;
  std::string value;
  if (!where.empty()) {
    const auto eq = where.find('=');
    if (eq == std::string::npos) throw std::runtime_error("--where " + where + ": must be COLUMN=VALUE");
    filter = column(header, where.substr(0, eq));
    value = where.substr(eq + 1);
    if (filter < 0) throw std::runtime_error("--where " + where + ": " + path + " has no such column");
  }
  std::vector<MeasuredAllReduce> rows;
  std::map<double, int> line_of_size;  // a size measured twice is two answers to one question
  for (int line_no = 2; std::getline(in, line); ++line_no) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string at = path + ":" + std::to_string(line_no);
    const std::vector<std::string> c = split_csv_line(line);
    if (c.size() != header.size())
      throw std::runtime_error(at + ": " + std::to_string(c.size()) + " columns, the header has " +
                               std::to_string(header.size()));
    if (filter >= 0 && c[filter] != value) continue;
    if (parse_number(c[size]) == 0.0) continue;  // nccl-tests' 0-byte row (a sweep from -b 0): no bandwidth in it
    MeasuredAllReduce m;
    m.bytes = positive_cell(c, size, header, at);
    m.time_s = time >= 0 ? positive_cell(c, time, header, at) * 1e-6
                         : bus_bandwidth_factor(CollectiveOp::all_reduce, ranks) * m.bytes /
                               (positive_cell(c, busbw, header, at) * 1e9);
    const auto [first, fresh] = line_of_size.emplace(m.bytes, line_no);
    if (!fresh)
      throw std::runtime_error(at + ": size_bytes=" + c[size] + " is given twice (line " + std::to_string(first->second) +
                               " too)" + (where.empty() ? "; keep one, or pick one run with --where" : " where " + where));
    if (m.bytes < min_bytes) continue;
    rows.push_back(m);
  }
  if (rows.empty()) throw std::runtime_error(path + ": no rows" + (where.empty() ? "" : " where " + where));
  return rows;
}

NetworkFitReport fit_network_efficiency(const ClusterSpec& cluster, int ranks,
                                        const std::vector<MeasuredAllReduce>& rows, bool fit_even) {
  NetworkFitReport r;
  for (std::size_t i = 0; i < rows.size(); ++i)
    if ((i % 2 == 0) == fit_even) r.curve.push_back({rows[i].bytes, matching_efficiency(cluster, ranks, rows[i])});
  const ClusterSpec fitted = with_efficiency(cluster, r.curve);
  std::vector<double> fit, held, fit_before, held_before;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const bool is_fit = (i % 2 == 0) == fit_even;
    const double m = rows[i].time_s;
    (is_fit ? fit : held).push_back(predicted_s(fitted, ranks, rows[i].bytes) / m - 1);
    (is_fit ? fit_before : held_before).push_back(predicted_s(cluster, ranks, rows[i].bytes) / m - 1);
  }
  r.fit = summarize(fit), r.held_out = summarize(held);
  r.fit_before = summarize(fit_before), r.held_out_before = summarize(held_before);
  return r;
}

NetworkFitReport fit_network(ClusterSpec cluster, const NetworkFitRequest& r) {
  int latency_sizes = 0;
  if (r.latency_max_bytes > 0) {
    std::vector<MeasuredAllReduce> small;
    for (const MeasuredAllReduce& m : read_allreduce_csv(r.path, r.ranks, r.where, 0))
      if (m.bytes >= r.latency_min_bytes && m.bytes <= r.latency_max_bytes) small.push_back(m);
    if (small.empty()) throw std::runtime_error(r.path + ": no sizes in the latency range");
    cluster.inter_node.latency_s = fit_network_latency_s(cluster, r.ranks, small);
    latency_sizes = static_cast<int>(small.size());
  }
  NetworkFitReport report =
      fit_network_efficiency(cluster, r.ranks, read_allreduce_csv(r.path, r.ranks, r.where, r.min_bytes), r.fit_even);
  report.latency_s = cluster.inter_node.latency_s;
  report.latency_sizes = latency_sizes;
  return report;
}

}  // namespace twinsim
