#include "calibrate/samples.hpp"

#include <algorithm>
#include <chrono>
#include <stdexcept>

namespace twinsim::calibrate {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

Stats stats_of(std::vector<double> s) {
  if (s.empty()) throw std::invalid_argument("stats_of: no samples");
  std::sort(s.begin(), s.end());
  const std::size_t n = s.size();
  Stats st;
  st.median = median_of(s);
  st.min = s.front();
  st.max = s.back();
  st.repeats = static_cast<int>(n);
  for (double x : s) st.mean += x / static_cast<double>(n);
  return st;
}

Stats merge_rounds(const std::vector<Stats>& rounds) {
  if (rounds.empty()) throw std::invalid_argument("merge_rounds: no rounds");
  std::vector<double> medians;
  Stats st = rounds.front();
  st.repeats = 0;
  st.mean = 0;
  for (const Stats& r : rounds) {
    st.mean += r.mean / static_cast<double>(rounds.size());
    medians.push_back(r.median);
    st.min = std::min(st.min, r.min);
    st.max = std::max(st.max, r.max);
    st.repeats += r.repeats;
  }
  st.median = stats_of(medians).median;
  return st;
}

Stats time_per_call(const std::function<void()>& body, int repeats, double min_repeat_s) {
  double t0 = now_s();
  body();  // warm-up: page faults, caches, lazy initialisation
  const double one = std::max(now_s() - t0, 1e-9);
  const long calls = std::max<long>(1, static_cast<long>(min_repeat_s / one));
  std::vector<double> per_call;
  for (int r = 0; r < repeats; ++r) {
    t0 = now_s();
    for (long i = 0; i < calls; ++i) body();
    per_call.push_back((now_s() - t0) / static_cast<double>(calls));
  }
  return stats_of(per_call);
}

}  // namespace twinsim::calibrate
