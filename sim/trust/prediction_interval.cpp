#include "sim/trust/prediction_interval.hpp"

#include <algorithm>

namespace twinsim::trust {

TrustInterval step_interval(const Scenario& s, const TrainingPrediction& p) {
  const bool extrapolated = std::any_of(p.ops.begin(), p.ops.end(), [](const OpPrediction& op) { return op.extrapolated; });
  const TrustQuery q{regime_of(s), static_cast<long long>(s.plan.world_size()), extrapolated};
  return trust_interval(committed_case_errors(), q, p.step_s);
}

TrustInterval serving_interval(const Scenario& s, double predicted_s) {
  const TrustQuery q{regime_of(s), static_cast<long long>(s.plan.world_size()), false};
  return trust_interval(committed_case_errors(), q, predicted_s);
}

}  // namespace twinsim::trust
