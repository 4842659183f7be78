#include "sim/cost/straggler_wait.hpp"

#include <algorithm>
#include <stdexcept>

namespace twinsim {

void add_straggler_waits(std::vector<double>& times, const std::vector<WaitRole>& roles, double straggler) {
  if (times.size() != roles.size()) throw std::invalid_argument("add_straggler_waits: one role per time");
  const auto first = std::find(roles.begin(), roles.end(), WaitRole::collective);
  if (first == roles.end() || straggler <= 0) return;
  // start after a collective and go round once: every collective, that one last, gets the
  // compute since the one before it
  const std::size_t n = roles.size(), start = static_cast<std::size_t>(first - roles.begin());
  double since = 0;
  for (std::size_t k = 1; k <= n; ++k) {
    const std::size_t i = (start + k) % n;
    if (roles[i] == WaitRole::compute) since += times[i];
    if (roles[i] != WaitRole::collective) continue;
    times[i] += straggler_wait_s(straggler, since);
    since = 0;
  }
}

}  // namespace twinsim
