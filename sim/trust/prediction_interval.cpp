#include "sim/trust/prediction_interval.hpp"

#include <algorithm>
#include <cmath>

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

std::string unvalidated_warning(const TrustInterval& t) {
  if (t.validated) return "";
  std::string out = "warning: outside every validated regime: no held-out validation case runs this workload on this "
                    "GPU, stack and model kind; the interval (+-" +
                    std::to_string(static_cast<int>(std::lround(100 * t.half_width))) + "%) is borrowed from " +
                    t.regime + " and widened:\n";
  for (const std::string& why : t.reasons) out += "  - " + why + "\n";
  return out;
}

}  // namespace twinsim::trust
