#include "sim/validate/csv_validation.hpp"

#include <cmath>
#include <stdexcept>

#include "sim/training/training_report.hpp"
#include "sim/validate/nelder_mead.hpp"

namespace twinsim {

namespace {

std::string config_label(const VtrainRow& r) {
  return "tp" + std::to_string(r.tp) + "-dp" + std::to_string(r.dp) + "-pp" + std::to_string(r.pp);
}

double predict_s(Scenario s, const Calibration* calibration) {
  if (calibration) apply(*calibration, s.cluster);
  return predict_training(s).step_s;
}

}  // namespace

std::vector<VtrainRow> select_half(const std::vector<VtrainRow>& rows, const std::string& half) {
  if (half == "all") return rows;
  if (half != "even" && half != "odd") throw std::invalid_argument("half '" + half + "' is not even, odd or all");
  const int parity = half == "even" ? 0 : 1;
  std::vector<VtrainRow> out;
  for (const VtrainRow& r : rows)
    if (r.index % 2 == parity) out.push_back(r);
  return out;
}

std::vector<VtrainRow> every_nth(const std::vector<VtrainRow>& rows, int stride) {
  std::vector<VtrainRow> out;
  for (std::size_t i = 0; i < rows.size(); i += static_cast<std::size_t>(stride)) out.push_back(rows[i]);
  return out;
}

std::vector<Scenario> vtrain_scenarios(const std::vector<VtrainRow>& rows, const ClusterSpec& cluster,
                                       const StackSpec& stack) {
  std::vector<Scenario> out;
  out.reserve(rows.size());
  for (const VtrainRow& r : rows) out.push_back(vtrain_scenario(r, cluster, stack));
  return out;
}

ValidationReport validate(const std::vector<VtrainRow>& rows, const std::vector<Scenario>& scenarios,
                          const Calibration* calibration) {
  ValidationReport rep;
  std::vector<double> errors;
  std::vector<std::string> gpus, configs;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    RowPrediction p{rows[i], predict_s(scenarios[i], calibration)};
    errors.push_back(p.signed_error());
    gpus.push_back(std::to_string(rows[i].gpus));
    configs.push_back(config_label(rows[i]));
    rep.rows.push_back(p);
  }
  rep.overall = summarize(errors);
  rep.by_gpus = summarize_by(errors, gpus);
  rep.by_config = summarize_by(errors, configs);
  return rep;
}

FitResult fit_calibration(const std::vector<VtrainRow>& rows, const std::vector<Scenario>& scenarios,
                          const Calibration& start, int max_evaluations) {
  // mean |log(pred / meas)|: symmetric in over- and under-prediction, and robust to the
  // few rows no setting of these figures explains
  auto objective = [&](const std::vector<double>& x) {
    const Calibration c = from_vector(x);
    double sum = 0;
    for (std::size_t i = 0; i < rows.size(); ++i) sum += std::abs(std::log(predict_s(scenarios[i], &c) / rows[i].measured_s));
    return sum / static_cast<double>(rows.size());
  };
  // two rounds: a restart from the first optimum rebuilds a simplex that may have
  // collapsed along some axis (a usual remedy, Lagarias et al. 1998 §1)
  NelderMeadOptions options;
  options.max_evaluations = max_evaluations / 2;
  options.initial_step = 0.5;
  NelderMeadResult r = nelder_mead(objective, to_vector(start), options);
  options.initial_step = 0.2;
  const int first = r.evaluations;
  r = nelder_mead(objective, r.x, options);
  r.evaluations += first;
  return {from_vector(r.x), r.value, r.evaluations};
}

}  // namespace twinsim
