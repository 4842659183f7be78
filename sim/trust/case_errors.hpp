#pragma once
// The held-out error of each validation case: what `twinsim trust-table` writes to
// sim/trust/case_errors.csv and what the trust intervals are made of. A case is one published
// or measured run (scenarios/validation/cases.csv) that no figure of the catalog was fitted
// to; its error is the log ratio of the predicted to the measured time of the same work
// (a throughput's inverse), so fast and slow errors weigh alike.
#include <string>
#include <vector>

#include "sim/trust/regime.hpp"

namespace twinsim::trust {

struct CaseError {
  std::string name;    // the case's name in cases.csv (a vTrain row: "vtrain-row-N")
  std::string source;  // the publication or measurement it comes from (one weight per source)
  std::string metric;  // what was compared: step_s, hardware_tflops_per_gpu, tpot_s, ...
  Regime regime;
  long long gpus = 0;
  bool extrapolated = false;  // the prediction priced some op beyond the measured tables
  double predicted = 0;       // in the metric's units
  double measured = 0;
  double log_ratio = 0;       // ln(predicted time / measured time)
};

// The CSV text (header, then one line per case, numbers to 6 significant digits).
std::string to_csv(const std::vector<CaseError>& cases);
// Reads it back; a malformed line throws std::runtime_error naming `origin`, the line and the
// column.
std::vector<CaseError> parse_case_errors(const std::string& text, const std::string& origin);

// The table committed with the source (sim/trust/case_errors.csv, built into the binary).
const std::vector<CaseError>& committed_case_errors();

}  // namespace twinsim::trust
