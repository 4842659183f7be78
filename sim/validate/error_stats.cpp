#include "sim/validate/error_stats.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace twinsim {

double relative_error(double predicted, double measured) { return std::abs(predicted - measured) / measured; }

double percentile(std::vector<double> values, double q) {
  if (values.empty()) throw std::invalid_argument("percentile of no values");
  if (q < 0 || q > 1) throw std::invalid_argument("percentile q=" + std::to_string(q) + " is not in [0, 1]");
  std::sort(values.begin(), values.end());
  // numpy.percentile, method "linear": rank q (n - 1), interpolated between neighbours
  const double rank = q * static_cast<double>(values.size() - 1);
  const std::size_t lo = static_cast<std::size_t>(std::floor(rank));
  const std::size_t hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (rank - static_cast<double>(lo)) * (values[hi] - values[lo]);
}

ErrorSummary summarize(const std::vector<double>& signed_errors) {
  ErrorSummary s;
  s.count = static_cast<int>(signed_errors.size());
  if (s.count == 0) return s;
  std::vector<double> abs_errors;
  for (double e : signed_errors) {
    abs_errors.push_back(std::abs(e));
    s.mean += std::abs(e);
    s.mean_signed += e;
    s.max = std::max(s.max, std::abs(e));
  }
  s.mean /= s.count;
  s.mean_signed /= s.count;
  s.median = percentile(abs_errors, 0.5);
  s.p90 = percentile(abs_errors, 0.9);
  return s;
}

std::map<std::string, ErrorSummary> summarize_by(const std::vector<double>& signed_errors,
                                                 const std::vector<std::string>& labels) {
  if (labels.size() != signed_errors.size()) throw std::invalid_argument("one label per error expected");
  std::map<std::string, std::vector<double>> groups;
  for (std::size_t i = 0; i < labels.size(); ++i) groups[labels[i]].push_back(signed_errors[i]);
  std::map<std::string, ErrorSummary> out;
  for (const auto& [label, errors] : groups) out[label] = summarize(errors);
  return out;
}

}  // namespace twinsim
