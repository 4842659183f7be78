// The decode GEMMs' gemm_reuse_time curve between back-to-back calibrations (issue 61):
// the reuse sweep (calibrate/cache_reuse.hpp) with `rounds` rounds (the argument) beside one
// other process, as calibrate runs it on 2 cores, 4 times. At the end it prints, per working
// set, the fitted value's median and range over the 4, for the isotonic fit calibrate writes
// and for the running maximum it wrote before (each set's time over the cold set's, never
// below a smaller set's). Then one sweep alone (no other process): where the knee sits when
// one rank has the cache to itself.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <vector>

#include "calibrate/cache_reuse.hpp"
#include "calibrate/compute_rounds.hpp"

namespace {

namespace cal = twinsim::calibrate;

// the rule before the isotonic fit: each time over the largest set's, at most 1, running max
std::vector<double> running_max_curve(std::vector<cal::MemoryPoint> p) {
  std::erase_if(p, [](const cal::MemoryPoint& q) { return q.kernel != cal::kGemmReuseKernel; });
  std::sort(p.begin(), p.end(), [](const auto& a, const auto& b) { return a.bytes < b.bytes; });
  std::vector<double> out;
  double floor = 0;
  for (const auto& q : p) out.push_back(floor = std::clamp(q.seconds.median / p.back().seconds.median, floor, 1.0));
  return out;
}

void print_spread(const char* fit, const std::vector<std::vector<double>>& curves, const std::vector<double>& mib) {
  std::printf("%s:", fit);
  for (std::size_t i = 0; i < mib.size(); ++i) {
    std::vector<double> v;
    for (const auto& c : curves) v.push_back(c[i]);
    std::sort(v.begin(), v.end());
    std::printf("  %g MiB %.3f [%.3f..%.3f]", mib[i], v[v.size() / 2], v.front(), v.back());
  }
  std::printf("\n");
}

struct Curves {
  std::vector<std::vector<double>> isotonic, running_max;
  void add(const cal::Calibration& c) {
    std::vector<double> curve;
    for (const cal::CurvePoint& p : cal::reuse_time_curve(c.memory)) curve.push_back(p.efficiency);
    isotonic.push_back(curve);
    running_max.push_back(running_max_curve(c.memory));
  }
  void print(const char* sweep) const {
    const std::vector<double> mib = cal::reuse_working_sets_MiB(false);
    std::printf("%s sweep, %zu calibrations\n", sweep, isotonic.size());
    print_spread("  isotonic", isotonic, mib);
    print_spread("  running max", running_max, mib);
  }
};

cal::Calibration one_sweep(int rounds, int ranks) {
  cal::Calibration c;
  cal::reuse_sweeps(c, cal::SweepOptions{}, rounds, ranks, [](const std::string&) {});
  return c;
}

void BM_ReuseCurve(benchmark::State& state) {
  const int rounds = static_cast<int>(state.range(0));
  Curves beside;
  for (auto _ : state) beside.add(one_sweep(rounds, 2));
  std::printf("rounds %d\n", rounds);
  beside.print("beside another process (calibrate's)");
  Curves alone;
  alone.add(one_sweep(rounds, 1));
  alone.print("no other process");
}
BENCHMARK(BM_ReuseCurve)->Arg(9)->Iterations(4)->Unit(benchmark::kSecond);

}  // namespace
