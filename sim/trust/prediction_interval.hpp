#pragma once
// The trust interval of a simulated prediction, from the committed validation errors
// (case_errors.csv): the step of a training scenario, the TTFT and TPOT of a serving one.
// The report's `time.step_s_interval` / `time.interval_basis` and the inference section's
// (docs/SCENARIO.md) are written from these, and `capacity` sizes at the slow end.
#include "scenario/scenario.hpp"
#include "sim/training/training_report.hpp"
#include "sim/trust/interval.hpp"

namespace twinsim::trust {

// The step's interval for scenario `s` predicted as `p`.
TrustInterval step_interval(const Scenario& s, const TrainingPrediction& p);

// A serving time's (TTFT, TPOT) interval for scenario `s`, predicted as `predicted_s`.
TrustInterval serving_interval(const Scenario& s, double predicted_s);

}  // namespace twinsim::trust
