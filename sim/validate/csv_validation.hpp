#pragma once
// Validation of the training simulator on measured runs (the vTrain table): simulate
// every row, compare with the measured iteration time, and fit the calibration's few
// efficiency figures on one half of the rows so the other half can judge them.
#include <map>
#include <string>
#include <vector>

#include "scenario/scenario.hpp"
#include "sim/validate/calibration.hpp"
#include "sim/validate/error_stats.hpp"
#include "sim/validate/vtrain_csv.hpp"

namespace twinsim {

struct RowPrediction {
  VtrainRow row;
  double predicted_s = 0;
  double signed_error() const { return (predicted_s - row.measured_s) / row.measured_s; }
};

struct ValidationReport {
  std::vector<RowPrediction> rows;
  ErrorSummary overall;
  std::map<std::string, ErrorSummary> by_gpus;    // "2", "4", "8"
  std::map<std::string, ErrorSummary> by_config;  // "tp2-dp2-pp2"
};

// The rows of one half: "even" or "odd" row indices, "all" for every row.
std::vector<VtrainRow> select_half(const std::vector<VtrainRow>& rows, const std::string& half);
// Every `stride`-th row (deterministic subsample), starting with the first.
std::vector<VtrainRow> every_nth(const std::vector<VtrainRow>& rows, int stride);

// One scenario per row on the cluster and stack described (see vtrain_scenario).
std::vector<Scenario> vtrain_scenarios(const std::vector<VtrainRow>& rows, const ClusterSpec& cluster,
                                       const StackSpec& stack);

// Simulates each scenario with the calibration applied (none: as loaded) and compares.
ValidationReport validate(const std::vector<VtrainRow>& rows, const std::vector<Scenario>& scenarios,
                          const Calibration* calibration = nullptr);

struct FitResult {
  Calibration calibration;
  double objective = 0;  // mean |log(pred / meas)| on the fit rows
  int evaluations = 0;   // full passes over the fit rows
};

// Nelder-Mead over the calibration vector, from `start`, minimising the mean absolute
// log error of the predicted iteration times on the given (fit) rows.
FitResult fit_calibration(const std::vector<VtrainRow>& rows, const std::vector<Scenario>& scenarios,
                          const Calibration& start, int max_evaluations);

}  // namespace twinsim
