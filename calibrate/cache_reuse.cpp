#include "calibrate/cache_reuse.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "calibrate/samples.hpp"
#include "kernels/cpu/linear.hpp"

namespace twinsim::calibrate {

std::vector<double> reuse_working_sets_MiB(bool quick) {
  if (quick) return {2, 8, 64};
  return {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 64};
}

namespace {

// The reuse points of `kernel` among `points`, smallest working set first.
std::vector<MemoryPoint> reuse_points_by_size(const std::vector<MemoryPoint>& points,
                                              std::string_view kernel = kGemmReuseKernel) {
  std::vector<MemoryPoint> p;
  for (const MemoryPoint& q : points)
    if (q.kernel == kernel) p.push_back(q);
  std::sort(p.begin(), p.end(), [](const MemoryPoint& a, const MemoryPoint& b) { return a.bytes < b.bytes; });
  return p;
}

}  // namespace

std::vector<CurvePoint> reuse_time_curve(const std::vector<MemoryPoint>& reuse_points, std::string_view kernel) {
  const std::vector<MemoryPoint> p = reuse_points_by_size(reuse_points, kernel);
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

// The weight matrices of every working set, and the next one each set's call reads.
class ReuseSets {
 public:
  explicit ReuseSets(const std::vector<double>& sets_MiB) {
    for (double mib : sets_MiB) {
      const int n = std::max(1, static_cast<int>(std::lround(mib * 1048576.0 / kMatrixBytes)));
      w_.emplace_back(n, std::vector<float>(static_cast<std::size_t>(kOut) * kIn, 0.01f));
    }
    next_.assign(w_.size(), 0);
  }
  std::size_t size() const { return w_.size(); }
  double bytes(std::size_t set) const { return static_cast<double>(w_[set].size()) * kMatrixBytes; }

  // Slots first .. first + count - 1 of `pace` (slot k: set k mod size): in each, a warm-up
  // rotation through the set's matrices (the set before left its own in the cache), then
  // calls until 0.9 of the slot, each slot's seconds per call appended to per_call[set].
  void run_slots(const ReusePace& pace, long first, long count, std::vector<std::vector<double>>& per_call) {
    for (long k = first; k < first + count; ++k) {
      const std::size_t set = static_cast<std::size_t>(k) % w_.size();
      const double begin = pace.origin_s + static_cast<double>(k) * pace.slot_s, end = begin + 0.9 * pace.slot_s;
      while (now_s() < begin) {
      }
      for (std::size_t i = 0; i < w_[set].size(); ++i) call(set);
      const double t0 = now_s();
      long calls = 0;
      for (; calls < 1 || now_s() < end; ++calls) call(set);
      per_call[set].push_back((now_s() - t0) / static_cast<double>(calls));
    }
  }

 private:
  static constexpr double kMatrixBytes = sizeof(float) * static_cast<double>(kOut) * kIn;
  void call(std::size_t set) {
    next_[set] = (next_[set] + 1) % static_cast<int>(w_[set].size());
    kernels::cpu::linear_forward(x_.data(), w_[set][next_[set]].data(), nullptr, y_.data(), kRows, kIn, kOut);
  }
  std::vector<std::vector<std::vector<float>>> w_;
  std::vector<int> next_;
  std::vector<float> x_ = std::vector<float>(static_cast<std::size_t>(kRows) * kIn, 0.5f);
  std::vector<float> y_ = std::vector<float>(static_cast<std::size_t>(kRows) * kOut);
};

// The rows of a "gemm_rows" point: its bytes are 4 (m k + n k + m n) with the reuse GEMM's n, k.
double rows_of(double bytes) {
  return (bytes / sizeof(float) - static_cast<double>(kOut) * kIn) / static_cast<double>(kIn + kOut);
}

// The first slot of `pace` that begins after now.
long next_slot(const ReusePace& pace) {
  return static_cast<long>(std::floor((now_s() - pace.origin_s) / pace.slot_s)) + 1;
}

}  // namespace

ReusePace reuse_pace(const SweepOptions& o) { return {now_s(), kReuseSlotsPerRepeat * o.min_repeat_s}; }

std::vector<MemoryPoint> reuse_points(const std::vector<double>& sets_MiB, const SweepOptions& o,
                                      const ReusePace& pace) {
  ReuseSets sets(sets_MiB);
  std::vector<std::vector<double>> per_call(sets.size());
  // o.repeats slots of each set, in turn, from the next slot (whichever set it is)
  sets.run_slots(pace, next_slot(pace), o.repeats * static_cast<long>(sets.size()), per_call);
  std::vector<MemoryPoint> out;
  for (std::size_t s = 0; s < sets.size(); ++s)
    out.push_back({kGemmReuseKernel, sets.bytes(s), stats_of(per_call[s]), false});
  return out;
}

std::vector<CurvePoint> rows_time_curve(const std::vector<MemoryPoint>& points) {
  std::map<double, double> by_rows;  // rows -> median seconds a call
  for (const MemoryPoint& p : points)
    if (p.kernel == kGemmRowsKernel) by_rows[std::round(rows_of(p.bytes))] = p.seconds.median;
  const auto ref = by_rows.find(kRows);
  if (ref == by_rows.end() || ref->second <= 0) return {};
  std::vector<CurvePoint> curve;
  for (const auto& [rows, s] : by_rows) curve.push_back({rows, s / ref->second});  // t(m) / t(4)
  return curve;
}

std::vector<MemoryPoint> rows_points(const SweepOptions& o) {
  const std::vector<int> rows = o.quick ? std::vector<int>{kRows} : std::vector<int>{1, 2, kRows, 8, 16};
  constexpr int kSets = 4;  // 4 MiB of weights
  std::vector<std::vector<float>> w(kSets, std::vector<float>(static_cast<std::size_t>(kOut) * kIn, 0.01f));
  const std::vector<float> x(static_cast<std::size_t>(rows.back()) * kIn, 0.5f);
  std::vector<float> y(static_cast<std::size_t>(rows.back()) * kOut);
  std::vector<std::vector<double>> per_call(rows.size());
  int next = 0;
  for (int rep = 0; rep < o.repeats; ++rep)
    for (std::size_t r = 0; r < rows.size(); ++r) {
      const auto call = [&] {
        next = (next + 1) % kSets;
        kernels::cpu::linear_forward(x.data(), w[next].data(), nullptr, y.data(), rows[r], kIn, kOut);
      };
      for (int i = 0; i < kSets; ++i) call();  // this row count's warm-up rotation
      const double t0 = now_s();
      long calls = 0;
      for (; calls < 1 || now_s() - t0 < o.min_repeat_s; ++calls) call();
      per_call[r].push_back((now_s() - t0) / static_cast<double>(calls));
    }
  std::vector<MemoryPoint> out;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const double m = rows[r];
    const double bytes = sizeof(float) * (m * kIn + static_cast<double>(kOut) * kIn + m * kOut);
    out.push_back({kGemmRowsKernel, bytes, stats_of(per_call[r]), false});
  }
  return out;
}

std::vector<MemoryPoint> reuse_sweep(const SweepOptions& o, const ReusePace& pace) {
  std::vector<MemoryPoint> out;
  for (double mib : reuse_working_sets_MiB(o.quick)) out.push_back(reuse_points({mib}, o, pace).front());
  SweepOptions warm = o;
  warm.cache_bytes = warm_working_set_bytes(out);
  if (o.cache_bytes > 0) warm.cache_bytes = std::min(warm.cache_bytes, o.cache_bytes);
  add_decode_gemm_points(out, warm, true);
  for (MemoryPoint& p : rows_points(o)) out.push_back(std::move(p));
  return out;
}

}  // namespace twinsim::calibrate
