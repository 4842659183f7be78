#pragma once
// Repeated timing of one benchmark body: the median is the figure, min and max the spread.
#include <functional>
#include <vector>

namespace twinsim::calibrate {

struct Stats {
  double median = 0, min = 0, max = 0;
  double mean = 0;
  int repeats = 0;
  // (max - min) / median: how much one repeat can be off on this (shared, loaded) machine
  double spread() const { return median > 0 ? (max - min) / median : 0; }
};

// Seconds on the steady clock (from an arbitrary origin).
double now_s();

// The middle value (the mean of the two middle ones for an even count); 0 for none.
double median_of(std::vector<double> values);

Stats stats_of(std::vector<double> seconds);
// One point measured in several rounds: the median of the rounds' medians, the extremes
// of all repeats (a shared machine's slow spells last longer than one point's repeats).
Stats merge_rounds(const std::vector<Stats>& rounds);

// Seconds per call of `body`: one warm-up call, then `repeats` timed repeats of as many
// calls as fill `min_repeat_s` (fast bodies are timed in batches, so the clock's
// resolution does not matter).
Stats time_per_call(const std::function<void()>& body, int repeats, double min_repeat_s = 2e-3);

}  // namespace twinsim::calibrate
