#pragma once
// `twinsim validate-csv` as one call: read a vTrain-format CSV, optionally fit the
// calibration on one half of its rows, simulate the other half (or the rows asked for) and
// compare (csv_validation.hpp); the result as SCENARIO.md's JSON and as the printed table.
#include <optional>
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/validate/csv_validation.hpp"

namespace twinsim {

struct CsvValidationOptions {
  std::string file;
  std::string cluster = "dgx-a100-80gb";  // node type or inline mapping; "uncalibrated": vTrain's own DGX A100
  std::string stack = kVtrainStack;
  std::string fit_half;  // "even" | "odd": fit on it, judge the other; "": no fit
  std::string eval_half = "all";
  int max_evals = 120;
  int fit_stride = 1;
  bool rows = false;  // every row's measured and predicted time in the JSON
  // `cluster` and `stack` read by the caller (scenario/load.hpp: cluster_from_text of
  // cluster_text(), stack_from_text of stack): sim/ reads no YAML
  ClusterSpec cluster_spec;
  StackSpec stack_spec;
  // The cluster as text: `cluster`, or for "uncalibrated" vTrain's own DGX A100 (its 150 GB/s NVLink).
  std::string cluster_text() const;
};

struct CsvValidationResult {
  nlohmann::json json;
  ValidationReport report;
  std::string evaluated;                // "held-out odd rows (720)"
  std::optional<FitResult> fit;         // with fit_half
  std::string calibration_yaml;         // the fitted node type as a catalog file, with fit_half
};

CsvValidationResult run_csv_validation(const CsvValidationOptions& options);

// The fit's line (when fitted) and the error table by GPU count and configuration.
void print_csv_validation(std::ostream& out, const CsvValidationResult& result);

}  // namespace twinsim
