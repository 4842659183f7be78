// `twinsim validate-csv FILE [--cluster C] [--fit-half even|odd] [--eval-half H]
//                         [--write-calibration PATH] [--json]`
// Simulates every measured run of a vTrain-format CSV and prints the error distribution;
// with --fit-half, first fits the calibration on that half and judges it on the other.
#include <fstream>
#include <iomanip>
#include <iostream>

#include <nlohmann/json.hpp>

#include "app/commands.hpp"
#include "app/cli_checks.hpp"
#include "sim/validate/csv_validation.hpp"
#include "io/whole_file.hpp"

namespace twinsim {

namespace {

// The node vTrain models before any calibration: DGX A100 with the 150 GB/s intra-node
// bandwidth of vTrain's configs (VIA-Research/vTrain, config/*.json "intra_node_bandwidth").
const char* const kUncalibrated = "{preset: dgx-a100-80gb, intra_node: {bandwidth_GBps: 150, latency_us: 3}}";

struct Options {
  std::string file;
  std::string cluster = "dgx-a100-80gb";
  std::string stack = kVtrainStack;
  std::string fit_half;
  std::string eval_half = "all";
  std::string write_calibration;
  int max_evals = 120;
  int fit_stride = 1;
  bool json = false;
  bool rows = false;
};

nlohmann::json to_json(const ErrorSummary& s) {
  return {{"count", s.count}, {"median", s.median}, {"mean", s.mean}, {"p90", s.p90},
          {"max", s.max}, {"mean_signed", s.mean_signed}};
}

nlohmann::json to_json(const Calibration& c) {
  nlohmann::json gemm = nlohmann::json::array();
  for (std::size_t i = 0; i < c.gemm_efficiency.size(); ++i)
    gemm.push_back({kCalibrationGemmSizes[i], c.gemm_efficiency[i]});
  return {{"gemm_efficiency", gemm}, {"memory_efficiency", c.memory_efficiency},
          {"kernel_launch_us", c.kernel_launch_s * 1e6}, {"nvlink_efficiency", c.nvlink_efficiency},
          {"nvlink_latency_us", c.nvlink_latency_s * 1e6}};
}

void print_row(std::ostream& out, const std::string& label, const ErrorSummary& s) {
  out << "  " << std::left << std::setw(14) << label << std::right << std::setw(6) << s.count << std::fixed
      << std::setprecision(1) << std::setw(9) << 100 * s.median << std::setw(9) << 100 * s.mean << std::setw(9)
      << 100 * s.p90 << std::setw(9) << 100 * s.max << std::setw(10) << std::showpos << 100 * s.mean_signed
      << std::noshowpos << "\n";
}

void print_report(std::ostream& out, const ValidationReport& r, const std::string& what) {
  out << what << ": |predicted - measured| / measured, in %\n";
  out << "  " << std::left << std::setw(14) << "group" << std::right << std::setw(6) << "runs" << std::setw(9)
      << "median" << std::setw(9) << "mean" << std::setw(9) << "p90" << std::setw(9) << "max" << std::setw(10)
      << "bias" << "\n";
  print_row(out, "all", r.overall);
  for (const auto& [g, s] : r.by_gpus) print_row(out, g + " GPUs", s);
  for (const auto& [c, s] : r.by_config) print_row(out, c, s);
}

void run(const Options& o) {
  const std::vector<VtrainRow> all = read_vtrain_csv(o.file);
  const std::string cluster = o.cluster == "uncalibrated" ? kUncalibrated : o.cluster;
  nlohmann::json out{{"file", o.file}, {"cluster", cluster}, {"stack", o.stack}};
  std::string eval_half = o.eval_half;
  const Calibration* calibration = nullptr;
  FitResult fit;
  if (!o.fit_half.empty()) {
    const std::vector<VtrainRow> fit_rows = every_nth(select_half(all, o.fit_half), o.fit_stride);
    const std::vector<Scenario> fit_scenarios = vtrain_scenarios(fit_rows, cluster, o.stack);
    fit = fit_calibration(fit_rows, fit_scenarios, calibration_of(fit_scenarios.front().cluster), o.max_evals);
    calibration = &fit.calibration;
    eval_half = o.fit_half == "even" ? "odd" : "even";
    out["fit"] = {{"half", o.fit_half}, {"rows", fit_rows.size()}, {"objective_mean_abs_log_error", fit.objective},
                  {"evaluations", fit.evaluations}, {"calibration", to_json(fit.calibration)}};
    if (!o.write_calibration.empty()) {
      io::write_file_whole(o.write_calibration, calibration_node_yaml(fit.calibration, fit_scenarios.front().cluster, fit_scenarios.front().cluster.gpu.name,
                                 "Calibrated by `twinsim validate-csv " + o.file + " --cluster " + o.cluster +
                                     " --fit-half " + o.fit_half + " --fit-stride " + std::to_string(o.fit_stride) +
                                     " --max-evals " + std::to_string(o.max_evals) + "`:\nNelder-Mead on " +
                                     std::to_string(fit_rows.size()) + " rows of the " + o.fit_half +
                                     " half, mean |log(pred/meas)| = " + std::to_string(fit.objective)));
    }
  }
  const std::vector<VtrainRow> eval_rows = select_half(all, eval_half);
  const ValidationReport report = validate(eval_rows, vtrain_scenarios(eval_rows, cluster, o.stack), calibration);
  out["evaluated_half"] = eval_half;
  out["overall"] = to_json(report.overall);
  for (const auto& [g, s] : report.by_gpus) out["by_gpus"][g] = to_json(s);
  for (const auto& [c, s] : report.by_config) out["by_config"][c] = to_json(s);
  if (o.rows)
    for (const RowPrediction& p : report.rows)
      out["rows"].push_back({{"index", p.row.index}, {"gpus", p.row.gpus}, {"global_batch", p.row.global_batch},
                             {"micro_batch", p.row.micro_batch}, {"hidden", p.row.hidden}, {"layers", p.row.layers},
                             {"tp", p.row.tp}, {"dp", p.row.dp}, {"pp", p.row.pp},
                             {"measured_s", p.row.measured_s}, {"predicted_s", p.predicted_s}});
  if (o.json) {
    std::cout << out.dump(2) << "\n";
    return;
  }
  if (!o.fit_half.empty())
    std::cout << "fitted on the " << o.fit_half << " half (" << out["fit"]["rows"] << " rows, " << fit.evaluations
              << " evaluations): " << to_json(fit.calibration).dump() << "\n\n";
  print_report(std::cout, report, (o.fit_half.empty() ? "" : "held-out ") + eval_half + " rows (" +
                                      std::to_string(eval_rows.size()) + ")");
}

}  // namespace

void add_validate_csv_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("validate-csv", "compare simulated and measured iteration times (vTrain CSV)");
  cmd->add_option("file", o->file, "CSV of measured runs (vTrain ground_truth format)")->required();
  cmd->add_option("--cluster", o->cluster,
                  "node type or inline cluster mapping; 'uncalibrated' = DGX A100 at vTrain's 150 GB/s NVLink")
      ->capture_default_str();
  cmd->add_option("--stack", o->stack, "software stack preset or inline mapping (the runs' own: Megatron eager)")
      ->capture_default_str();
  cmd->add_option("--fit-half", o->fit_half, "fit the calibration on this half, judge it on the other")
      ->check(CLI::IsMember({"even", "odd"}));
  cmd->add_option("--eval-half", o->eval_half, "rows to evaluate without a fit")
      ->check(CLI::IsMember({"even", "odd", "all"}))->capture_default_str();
  cmd->add_option("--fit-stride", o->fit_stride, "fit on every N-th row of the fit half")->check(cli::whole(1, 1000000));
  cmd->add_option("--max-evals", o->max_evals, "Nelder-Mead evaluations of the fit objective")
      ->check(cli::whole(1, 1'000'000))
      ->capture_default_str();
  cmd->add_option("--write-calibration", o->write_calibration, "write the fitted node type (catalog YAML) here");
  cmd->add_flag("--json", o->json, "print JSON instead of a table");
  cmd->add_flag("--rows", o->rows, "with --json: every row's measured and predicted time");
  cmd->callback([o] { run(*o); });
}

}  // namespace twinsim
