#pragma once
// One predicted figure beside its measurement.
#include <cmath>

namespace twinsim::compare {

struct Pair {
  double predicted = 0;
  double measured = 0;
  // predicted - measured: positive when the simulator over-predicts
  double abs_error() const { return predicted - measured; }
  // relative to the measurement; 0 when both are 0, infinite when only the measurement is
  double rel_error() const {
    if (measured == 0) return predicted == 0 ? 0 : INFINITY;
    return (predicted - measured) / measured;
  }
};

}  // namespace twinsim::compare
