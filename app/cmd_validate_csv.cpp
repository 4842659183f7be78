// `twinsim validate-csv FILE [--cluster C] [--fit-half even|odd] [--eval-half H]
//                         [--write-calibration PATH] [--json]`
// Simulates every measured run of a vTrain-format CSV and prints the error distribution;
// with --fit-half, first fits the calibration on that half and judges it on the other
// (sim/validate/csv_validation_run.hpp).
#include <iostream>
#include <nlohmann/json.hpp>

#include "app/cli_checks.hpp"
#include "app/commands.hpp"
#include "scenario/load.hpp"
#include "io/whole_file.hpp"
#include "sim/validate/csv_validation_run.hpp"

namespace twinsim {

namespace {

struct Options {
  CsvValidationOptions run;
  std::string write_calibration;
  bool json = false;
};

void run(const Options& o) {
  if (!o.write_calibration.empty()) io::check_writable(o.write_calibration);  // before the fit, not after
  CsvValidationOptions run = o.run;
  run.cluster_spec = cluster_from_text(run.cluster_text(), "--cluster");
  run.stack_spec = stack_from_text(run.stack, "--stack");
  const CsvValidationResult r = run_csv_validation(run);
  if (!o.write_calibration.empty() && r.fit) io::write_file_whole(o.write_calibration, r.calibration_yaml);
  if (o.json) std::cout << r.json.dump(2) << "\n";
  else print_csv_validation(std::cout, r);
}

}  // namespace

void add_validate_csv_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  CsvValidationOptions& r = o->run;
  CLI::App* cmd = app.add_subcommand("validate-csv", "compare simulated and measured iteration times (vTrain CSV)");
  cmd->add_option("file", r.file, "CSV of measured runs (vTrain ground_truth format)")->required();
  cmd->add_option("--cluster", r.cluster,
                  "node type or inline cluster mapping; 'uncalibrated' = DGX A100 at vTrain's 150 GB/s NVLink")
      ->capture_default_str();
  cmd->add_option("--stack", r.stack, "software stack preset or inline mapping (the runs' own: Megatron eager)")
      ->capture_default_str();
  auto* fit = cmd->add_option("--fit-half", r.fit_half, "fit the calibration on this half, judge it on the other")
                  ->check(CLI::IsMember({"even", "odd"}));
  cmd->add_option("--eval-half", r.eval_half, "rows to evaluate without a fit")
      ->check(CLI::IsMember({"even", "odd", "all"}))->capture_default_str();
  cmd->add_option("--fit-stride", r.fit_stride, "fit on every N-th row of the fit half")->check(cli::whole(1, 1000000));
  cmd->add_option("--max-evals", r.max_evals, "Nelder-Mead evaluations of the fit objective")
      ->check(cli::whole(1, 1'000'000))
      ->capture_default_str();
  cmd->add_option("--write-calibration", o->write_calibration, "write the fitted node type (catalog YAML) here")
      ->needs(fit);
  cmd->add_flag("--json", o->json, "print JSON instead of a table");
  cmd->add_flag("--rows", r.rows, "with --json: every row's measured and predicted time");
  cmd->callback([o] { run(*o); });
}

}  // namespace twinsim
