// `twinsim collective --cluster C --op allreduce --ranks N`: the predicted size sweep of
// one collective, printed like nccl-tests (size, time, algbw, busbw; doc/PERFORMANCE.md).
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "app/commands.hpp"
#include "scenario/errors.hpp"
#include "app/cli_checks.hpp"
#include "scenario/load.hpp"
#include "sim/cost/collective_sweep.hpp"

namespace twinsim {

namespace {

struct CollectiveArgs {
  std::string cluster = "dgx-a100-80gb";
  std::string op = "allreduce";
  int ranks = 8;
  std::uint64_t min_bytes = 8;
  std::uint64_t max_bytes = std::uint64_t{8} << 30;
  double factor = 2;
  bool json = false;
};

// send_recv prices one pair of the ring of sends: across nodes when the ranks span nodes.
GroupLayout group_for(const ClusterSpec& cluster, CollectiveOp op, int ranks) {
  if (op == CollectiveOp::send_recv) return {2, ranks <= cluster.gpus_per_node ? 2 : 1};
  return packed_group(cluster, ranks);
}

void print_table(std::ostream& out, const CollectiveArgs& a, const ClusterSpec& cluster, CollectiveOp op,
                 const std::vector<SweepRow>& rows) {
  out << "# twinsim collective (predicted): " << to_string(op) << ", " << a.ranks << " ranks on "
      << cluster.nodes << " x " << cluster.name << " (" << cluster.gpus_per_node << " GPUs per node)\n#\n";
  char line[160];
  std::snprintf(line, sizeof line, "# %12s  %10s  %8s  %8s  %6s  %6s\n", "size", "time", "algbw", "busbw", "algo", "proto");
  out << line;
  std::snprintf(line, sizeof line, "# %12s  %10s  %8s  %8s\n", "(B)", "(us)", "(GB/s)", "(GB/s)");
  out << line;
  for (const SweepRow& r : rows) {
    // a measured curve's row says so: "table", and "extrap" outside the measured range
    const std::string algo = r.measured ? "table" : std::string(to_string(r.algorithm));
    const std::string proto = r.measured ? (r.extrapolated ? "extrap" : "meas") : std::string(to_string(r.protocol));
    std::snprintf(line, sizeof line, "  %12.0f  %10.2f  %8.2f  %8.2f  %6s  %6s\n", r.bytes, r.time_s * 1e6,
                  r.algbw_GBps, r.busbw_GBps, algo.c_str(), proto.c_str());
    out << line;
  }
}

nlohmann::json to_json(const CollectiveArgs& a, const ClusterSpec& cluster, CollectiveOp op,
                       const std::vector<SweepRow>& rows) {
  nlohmann::json j = {{"cluster", cluster.name}, {"nodes", cluster.nodes}, {"op", std::string(to_string(op))},
                      {"ranks", a.ranks}, {"rows", nlohmann::json::array()}};
  for (const SweepRow& r : rows)
    j["rows"].push_back({{"bytes", r.bytes}, {"time_s", r.time_s}, {"algbw_GBps", r.algbw_GBps},
                         {"busbw_GBps", r.busbw_GBps}, {"algorithm", std::string(to_string(r.algorithm))},
                         {"protocol", std::string(to_string(r.protocol))},
                         {"source", r.measured ? "measured" : "model"}, {"extrapolated", r.extrapolated}});
  return j;
}

void run(const CollectiveArgs& a) {
  CollectiveOp op;
  if (!parse_collective(a.op, op)) throw CLI::ValidationError("--op", "unknown collective '" + a.op + "'");
  if (a.min_bytes == 0) throw ScenarioError("--min-bytes", "0", "must be at least 1 byte");
  if (a.min_bytes > a.max_bytes)
    throw ScenarioError("--max-bytes", std::to_string(a.max_bytes),
                        "is below --min-bytes=" + std::to_string(a.min_bytes) + ": the sweep runs from min to max");
  ClusterSpec cluster = cluster_from_text(a.cluster, "--cluster");
  cluster.nodes = (a.ranks + cluster.gpus_per_node - 1) / cluster.gpus_per_node;
  const auto rows = collective_sweep(cluster, op, group_for(cluster, op, a.ranks), static_cast<double>(a.min_bytes),
                                     static_cast<double>(a.max_bytes), a.factor);
  if (a.json) std::cout << to_json(a, cluster, op, rows).dump(2) << "\n";
  else print_table(std::cout, a, cluster, op, rows);
}

}  // namespace

void add_collective_command(CLI::App& app) {
  auto args = std::make_shared<CollectiveArgs>();
  CLI::App* cmd = app.add_subcommand("collective", "predict a collective's time over a size sweep, as nccl-tests prints it");
  cmd->add_option("--cluster", args->cluster, "catalog node type or a YAML mapping ({preset: aws-p5, inter_node: {latency_us: 50}}); as many nodes as the ranks need")->capture_default_str();
  cmd->add_option("--op", args->op, "allreduce | allgather | reducescatter | alltoall | broadcast | sendrecv")
      ->capture_default_str();
  cmd->add_option("--ranks", args->ranks, "GPUs taking part, packed onto nodes")->check(cli::whole(1, 1 << 24))
      ->capture_default_str();
  cmd->add_option("-b,--min-bytes", args->min_bytes, "smallest size, e.g. 8 or 1M")
      ->transform(CLI::AsSizeValue(false))->capture_default_str();
  cmd->add_option("-e,--max-bytes", args->max_bytes, "largest size, e.g. 8G")
      ->transform(CLI::AsSizeValue(false))->capture_default_str();
  cmd->add_option("-f,--factor", args->factor, "size multiplier between rows")->check(cli::number(1.0001, 1024.0))
      ->capture_default_str();
  cmd->add_flag("--json", args->json, "print the rows as JSON");
  cmd->callback([args] { run(*args); });
}

}  // namespace twinsim
