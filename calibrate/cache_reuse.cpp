#include "calibrate/cache_reuse.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "kernels/cpu/linear.hpp"

namespace twinsim::calibrate {

std::vector<double> reuse_working_sets_MiB(bool quick) {
  if (quick) return {2, 8, 64};
  return {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 64};
}

namespace {

// The reuse points among `points`, smallest working set first.
std::vector<MemoryPoint> reuse_points_by_size(const std::vector<MemoryPoint>& points) {
  std::vector<MemoryPoint> p;
  for (const MemoryPoint& q : points)
    if (q.kernel == kGemmReuseKernel) p.push_back(q);
  std::sort(p.begin(), p.end(), [](const MemoryPoint& a, const MemoryPoint& b) { return a.bytes < b.bytes; });
  return p;
}

}  // namespace

std::vector<CurvePoint> reuse_time_curve(const std::vector<MemoryPoint>& reuse_points) {
  const std::vector<MemoryPoint> p = reuse_points_by_size(reuse_points);
  std::vector<CurvePoint> curve;
  if (p.size() < 2) return curve;
  std::vector<double> times;
  for (const MemoryPoint& q : p) times.push_back(q.seconds.median);
  // a larger set cannot run warmer: the isotonic fit pools a dip with its neighbours, and
  // the cold level is the fitted largest set's (a pool of the cold sets where they dip)
  const std::vector<double> fitted = isotonic_non_decreasing(times);
  for (std::size_t i = 0; i < p.size(); ++i) curve.push_back({p[i].bytes, std::min(fitted[i] / fitted.back(), 1.0)});
  return curve;
}

double warm_working_set_bytes(const std::vector<MemoryPoint>& reuse_points) {
  const std::vector<MemoryPoint> p = reuse_points_by_size(reuse_points);
  if (p.size() < 2) return 0;
  const double halfway = std::log(p.front().seconds.median * p.back().seconds.median) / 2;
  for (std::size_t i = 1; i < p.size(); ++i) {
    const double below = std::log(p[i - 1].seconds.median), above = std::log(p[i].seconds.median);
    if (above <= halfway) continue;
    // between the two sets, log time linear in log bytes
    const double t = std::clamp((halfway - below) / (above - below), 0.0, 1.0);
    return std::exp(std::log(p[i - 1].bytes) + t * (std::log(p[i].bytes) - std::log(p[i - 1].bytes)));
  }
  return p.back().bytes;
}

namespace {

// The reuse GEMM: 4 rows (a decode of 4 sequences) against 1024 x 256 fp32 weights (1 MiB,
// tiny-gpt's FFN and the executor's widest projections).
constexpr int kRows = 4, kOut = 1024, kIn = 256;

// The reuse GEMM rotated through `working_set` bytes of weight matrices.
MemoryPoint reuse_point(double working_set, const SweepOptions& o) {
  const double matrix = sizeof(float) * static_cast<double>(kOut) * kIn;
  const int sets = std::max(1, static_cast<int>(std::lround(working_set / matrix)));
  std::vector<std::vector<float>> w(sets, std::vector<float>(static_cast<std::size_t>(kOut) * kIn, 0.01f));
  std::vector<float> x(static_cast<std::size_t>(kRows) * kIn, 0.5f), y(static_cast<std::size_t>(kRows) * kOut);
  int i = 0;
  const Stats s = time_per_call(
      [&] {
        i = (i + 1) % sets;
        kernels::cpu::linear_forward(x.data(), w[i].data(), nullptr, y.data(), kRows, kIn, kOut);
      },
      o.repeats, o.min_repeat_s);
  return {kGemmReuseKernel, sets * matrix, s, false};
}

}  // namespace

std::vector<MemoryPoint> reuse_sweep(const SweepOptions& o) {
  std::vector<MemoryPoint> out;
  for (double mib : reuse_working_sets_MiB(o.quick)) out.push_back(reuse_point(mib * 1048576.0, o));
  SweepOptions warm = o;
  warm.cache_bytes = warm_working_set_bytes(out);
  if (o.cache_bytes > 0) warm.cache_bytes = std::min(warm.cache_bytes, o.cache_bytes);
  add_decode_gemm_points(out, warm, true);
  return out;
}

}  // namespace twinsim::calibrate
