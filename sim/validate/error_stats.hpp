#pragma once
// How far predictions land from measurements: the relative error |pred - meas| / meas
// of each run, summarised by median, mean and 90th percentile, overall and by group.
#include <map>
#include <string>
#include <vector>

namespace twinsim {

struct ErrorSummary {
  int count = 0;
  double median = 0;
  double mean = 0;
  double p90 = 0;
  double max = 0;
  double mean_signed = 0;  // mean of (pred - meas) / meas: above 0 the model is slow
};

double relative_error(double predicted, double measured);

// Percentile by linear interpolation between closest ranks (numpy's default, "linear").
double percentile(std::vector<double> values, double q);

// Summary of signed relative errors (pred - meas) / meas.
ErrorSummary summarize(const std::vector<double>& signed_errors);

// Summaries of the errors grouped by a label per run (same order as the errors).
std::map<std::string, ErrorSummary> summarize_by(const std::vector<double>& signed_errors,
                                                 const std::vector<std::string>& labels);

}  // namespace twinsim
