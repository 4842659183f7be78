#include "sim/validate/csv_validation_run.hpp"

#include <iomanip>
#include <nlohmann/json.hpp>

namespace twinsim {

namespace {

// The node vTrain models before any calibration: DGX A100 with the 150 GB/s intra-node
// bandwidth of vTrain's configs (VIA-Research/vTrain, config/*.json "intra_node_bandwidth").
const char* const kUncalibrated = "{preset: dgx-a100-80gb, intra_node: {bandwidth_GBps: 150, latency_us: 3}}";

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

}  // namespace

std::string CsvValidationOptions::cluster_text() const { return cluster == "uncalibrated" ? kUncalibrated : cluster; }

CsvValidationResult run_csv_validation(const CsvValidationOptions& o) {
  const std::vector<VtrainRow> all = read_vtrain_csv(o.file);
  const std::string cluster = o.cluster_text();
  CsvValidationResult r;
  nlohmann::json& out = r.json;
  out = {{"file", o.file}, {"cluster", cluster}, {"stack", o.stack}};
  std::string eval_half = o.eval_half;
  if (!o.fit_half.empty()) {
    const std::vector<VtrainRow> fit_rows = every_nth(select_half(all, o.fit_half), o.fit_stride);
    const std::vector<Scenario> fit_scenarios = vtrain_scenarios(fit_rows, o.cluster_spec, o.stack_spec);
    r.fit = fit_calibration(fit_rows, fit_scenarios, calibration_of(fit_scenarios.front().cluster), o.max_evals);
    eval_half = o.fit_half == "even" ? "odd" : "even";
    out["fit"] = {{"half", o.fit_half}, {"rows", fit_rows.size()}, {"objective_mean_abs_log_error", r.fit->objective},
                  {"evaluations", r.fit->evaluations}, {"calibration", to_json(r.fit->calibration)}};
    r.calibration_yaml = calibration_node_yaml(
        r.fit->calibration, fit_scenarios.front().cluster, fit_scenarios.front().cluster.gpu.name,
        "Calibrated by `twinsim validate-csv " + o.file + " --cluster " + o.cluster + " --fit-half " + o.fit_half +
            " --fit-stride " + std::to_string(o.fit_stride) + " --max-evals " + std::to_string(o.max_evals) +
            "`:\nNelder-Mead on " + std::to_string(fit_rows.size()) + " rows of the " + o.fit_half +
            " half, mean |log(pred/meas)| = " + std::to_string(r.fit->objective));
  }
  const std::vector<VtrainRow> eval_rows = select_half(all, eval_half);
  r.report = validate(eval_rows, vtrain_scenarios(eval_rows, o.cluster_spec, o.stack_spec), r.fit ? &r.fit->calibration : nullptr);
  r.evaluated = (o.fit_half.empty() ? "" : "held-out ") + eval_half + " rows (" + std::to_string(eval_rows.size()) + ")";
  out["evaluated_half"] = eval_half;
  out["overall"] = to_json(r.report.overall);
  for (const auto& [g, s] : r.report.by_gpus) out["by_gpus"][g] = to_json(s);
  for (const auto& [c, s] : r.report.by_config) out["by_config"][c] = to_json(s);
  if (o.rows)
    for (const RowPrediction& p : r.report.rows)
      out["rows"].push_back({{"index", p.row.index}, {"gpus", p.row.gpus}, {"global_batch", p.row.global_batch},
                             {"micro_batch", p.row.micro_batch}, {"hidden", p.row.hidden}, {"layers", p.row.layers},
                             {"tp", p.row.tp}, {"dp", p.row.dp}, {"pp", p.row.pp},
                             {"measured_s", p.row.measured_s}, {"predicted_s", p.predicted_s}});
  return r;
}

void print_csv_validation(std::ostream& out, const CsvValidationResult& r) {
  if (r.fit)
    out << "fitted on the " << r.json["fit"]["half"].get<std::string>() << " half (" << r.json["fit"]["rows"] << " rows, "
        << r.fit->evaluations << " evaluations): " << to_json(r.fit->calibration).dump() << "\n\n";
  print_report(out, r.report, r.evaluated);
}

}  // namespace twinsim
