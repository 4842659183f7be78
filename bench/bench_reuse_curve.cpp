// The decode GEMMs' gemm_reuse_time curve between back-to-back calibrations (issue 61):
// the reuse sweep (calibrate/cache_reuse.hpp) run once per iteration with `rounds` rounds
// (the argument) beside one other process, as calibrate runs it on 2 cores. At the end it
// prints, per working set, the fitted value's median and spread (max - min) over the
// iterations, for the isotonic fit calibrate writes and for the running maximum it wrote
// before (each set's time over the cold set's, never below a smaller set's).
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

void BM_ReuseCurve(benchmark::State& state) {
  cal::SweepOptions o;
  const int rounds = static_cast<int>(state.range(0));
  std::vector<std::vector<double>> isotonic, running_max;
  for (auto _ : state) {
    cal::Calibration c;
    cal::reuse_sweeps(c, o, rounds, 2, [](const std::string&) {});
    std::vector<double> curve;
    for (const cal::CurvePoint& p : cal::reuse_time_curve(c.memory)) curve.push_back(p.efficiency);
    isotonic.push_back(curve);
    running_max.push_back(running_max_curve(c.memory));
  }
  std::printf("rounds %d, %zu calibrations\n", rounds, isotonic.size());
  print_spread("isotonic", isotonic, cal::reuse_working_sets_MiB(false));
  print_spread("running max", running_max, cal::reuse_working_sets_MiB(false));
}
BENCHMARK(BM_ReuseCurve)->Arg(3)->Arg(9)->Iterations(5)->Unit(benchmark::kSecond);

}  // namespace
