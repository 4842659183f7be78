#include "calibrate/fit.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "calibrate/cache_reuse.hpp"
#include "calibrate/host_path.hpp"
#include "calibrate/samples.hpp"

namespace twinsim::calibrate {

namespace {

std::vector<CurvePoint> median_curve(const std::map<double, std::vector<double>>& by_size, double floor = 0.01) {
  std::vector<CurvePoint> curve;
  for (const auto& [size, effs] : by_size) curve.push_back({size, std::clamp(median_of(effs), floor, 1.0)});
  return curve;
}

// A running median of three neighbours: on a shared machine one lucky (or unlucky)
// point should not bend the curve for every op of that size.
std::vector<CurvePoint> running_median(const std::vector<CurvePoint>& curve) {
  std::vector<CurvePoint> smooth = curve;
  for (std::size_t i = 1; i + 1 < curve.size(); ++i)
    smooth[i].efficiency = median_of({curve[i - 1].efficiency, curve[i].efficiency, curve[i + 1].efficiency});
  return smooth;
}

}  // namespace

std::vector<double> isotonic_non_decreasing(const std::vector<double>& y) {
  struct Pool {
    double sum = 0;
    int count = 0;
    double mean() const { return sum / count; }
  };
  std::vector<Pool> pools;
  for (double v : y) {
    pools.push_back({v, 1});
    // a pool below the one before it violates the order: merge the two, again while it does
    while (pools.size() > 1 && pools[pools.size() - 2].mean() > pools.back().mean()) {
      const Pool last = pools.back();
      pools.pop_back();
      pools.back().sum += last.sum, pools.back().count += last.count;
    }
  }
  std::vector<double> fitted;
  for (const Pool& p : pools) fitted.insert(fitted.end(), static_cast<std::size_t>(p.count), p.mean());
  return fitted;
}

namespace {

// Message steps of a ring (Thakur et al. 2005 §4): n-1 per pass, two passes for all-reduce;
// one for a send/recv.
int ring_steps(const CommPoint& p) {
  if (p.op == "all_reduce") return 2 * (p.ranks - 1);
  // all-to-all: one message to each other rank (a pairwise exchange)
  if (p.op == "all_gather" || p.op == "reduce_scatter" || p.op == "all_to_all") return p.ranks - 1;
  return 1;
}

}  // namespace

LineFit fit_line_relative(const std::vector<double>& x, const std::vector<double>& t) {
  if (x.size() != t.size() || x.size() < 2) throw std::invalid_argument("fit_line_relative: needs two points or more");
  // normal equations of min sum ((a + b x_i) / t_i - 1)^2
  double s11 = 0, s12 = 0, s22 = 0, r1 = 0, r2 = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double u = 1 / t[i], w = x[i] / t[i];
    s11 += u * u;
    s12 += u * w;
    s22 += w * w;
    r1 += u;
    r2 += w;
  }
  const double det = s11 * s22 - s12 * s12;
  if (det == 0) throw std::invalid_argument("fit_line_relative: all x equal");
  return {(r1 * s22 - r2 * s12) / det, (s11 * r2 - s12 * r1) / det};
}

namespace {

// fp32's time over the 16-bit path's for each 16-bit point with an fp32 twin (same shape and pass).
std::map<Dtype, std::vector<double>> speed_16bit(const std::vector<GemmPoint>& points, double launch_s) {
  std::map<Dtype, std::vector<double>> ratios;
  for (const GemmPoint& p : points) {
    if (p.dtype == Dtype::fp32) continue;
    for (const GemmPoint& q : points)
      if (q.dtype == Dtype::fp32 && q.m == p.m && q.n == p.n && q.k == p.k && q.pass == p.pass)
        ratios[p.dtype].push_back(std::max(q.seconds.median - launch_s, 1e-12) /
                                  std::max(p.seconds.median - launch_s, 1e-12));
  }
  return ratios;
}

}  // namespace

GemmFit fit_gemm(const std::vector<GemmPoint>& points, double launch_s) {
  GemmFit f;
  auto rate = [&](const GemmPoint& p) { return p.flops / std::max(p.seconds.median - launch_s, 1e-12); };
  for (const GemmPoint& p : points)
    if (p.dtype == Dtype::fp32) f.peak_flops = std::max(f.peak_flops, rate(p));
  if (f.peak_flops <= 0) throw std::invalid_argument("fit_gemm: no fp32 points");
  auto curve_of = [&](GemmPass pass) {
    std::map<double, std::vector<double>> by_flops;
    for (const GemmPoint& p : points)
      if (p.pass == pass && p.dtype == Dtype::fp32) by_flops[p.flops].push_back(rate(p) / f.peak_flops);
    return by_flops.empty() ? std::vector<CurvePoint>{} : running_median(median_curve(by_flops));
  };
  f.curve = curve_of(GemmPass::fwd);
  f.dgrad = curve_of(GemmPass::dgrad);
  f.wgrad = curve_of(GemmPass::wgrad);
  if (f.curve.empty()) throw std::invalid_argument("fit_gemm: no forward points");
  for (const auto& [dtype, ratios] : speed_16bit(points, launch_s))
    f.peak_16bit[dtype] = f.peak_flops * median_of(ratios);
  return f;
}

AttentionFit fit_attention(const std::vector<AttentionPoint>& points, double peak_flops, double launch_s) {
  AttentionFit f;
  std::map<double, std::vector<double>> fwd, bwd;
  for (const AttentionPoint& p : points)
    if (!p.kv_cache)
      (p.backward ? bwd : fwd)[p.flops].push_back(p.flops / std::max(p.seconds.median - launch_s, 1e-12) / peak_flops);
  f.fwd = running_median(median_curve(fwd, kMinKernelEfficiency));
  f.bwd = running_median(median_curve(bwd, kMinKernelEfficiency));
  return f;
}

std::map<int, AttentionFit> fit_attention_by_head_dim(const std::vector<AttentionPoint>& points, double peak_flops,
                                                      double launch_s) {
  std::map<int, std::vector<AttentionPoint>> by_width;
  for (const AttentionPoint& p : points)
    if (!p.kv_cache) by_width[p.head_dim].push_back(p);
  std::map<int, AttentionFit> fits;
  if (by_width.size() < 2) return fits;
  for (const auto& [width, own] : by_width) fits[width] = fit_attention(own, peak_flops, launch_s);
  return fits;
}

std::vector<CurvePoint> fit_kv_attention(const std::vector<AttentionPoint>& points, double peak_flops, double launch_s) {
  std::map<double, std::vector<double>> by_flops;
  for (const AttentionPoint& p : points)
    if (p.kv_cache && p.seq > 1)
      by_flops[p.flops].push_back(p.flops / std::max(p.seconds.median - launch_s, 1e-12) / peak_flops);
  return running_median(median_curve(by_flops, kMinKernelEfficiency));
}

KernelCurves fit_kv_attention_memory(const std::vector<AttentionPoint>& points, const MemoryFit& memory, bool mla) {
  std::map<double, std::vector<double>> by_bytes;
  for (const AttentionPoint& p : points)
    if (p.kv_cache && p.seq == 1 && (p.v_head_dim > 0) == mla)
      by_bytes[p.bytes].push_back(p.bytes / std::max(p.seconds.median - memory.launch_s, 1e-12) / memory.copy_Bps);
  return {running_median(median_curve(by_bytes, kMinKernelEfficiency)), {}};
}

std::map<std::string, KernelCurves> fit_kernels(const std::vector<MemoryPoint>& points, const MemoryFit& memory,
                                                bool half) {
  std::map<std::string, std::pair<std::map<double, std::vector<double>>, std::map<double, std::vector<double>>>> by_kernel;
  for (const MemoryPoint& p : points) {
    // the bandwidth itself and the offload's copies (host_path.hpp), not kernels of the op list
    // and the reuse sweep's working sets and row counts (cache_reuse.hpp), not a kernel's rate
    if (p.kernel == "copy" || p.kernel == "add" || p.kernel == kHostCopyKernel || p.kernel == kGemmReuseKernel ||
        p.kernel == kGemmReuseAloneKernel || p.kernel == kGemmRowsKernel)
      continue;
    if (p.half != half) continue;
    const double eff = p.bytes / std::max(p.seconds.median - memory.launch_s, 1e-12) / memory.copy_Bps;
    auto& [fwd, bwd] = by_kernel[p.kernel];
    (p.backward ? bwd : fwd)[p.bytes].push_back(eff);
  }
  std::map<std::string, KernelCurves> kernels;
  for (const auto& [name, passes] : by_kernel)
    kernels[name] = {running_median(median_curve(passes.first, kMinKernelEfficiency)),
                     running_median(median_curve(passes.second, kMinKernelEfficiency))};
  return kernels;
}

MemoryFit fit_memory(const std::vector<MemoryPoint>& points) {
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> per_kernel;
  for (const MemoryPoint& p : points) {
    if (p.backward || p.half) continue;  // the fp32 kernels' rates
    per_kernel[p.kernel].first.push_back(p.bytes);
    per_kernel[p.kernel].second.push_back(p.seconds.median);
  }
  if (!per_kernel.count("copy")) throw std::invalid_argument("fit_memory: no copy points");
  MemoryFit f;
  const LineFit copy = fit_line_relative(per_kernel["copy"].first, per_kernel["copy"].second);
  f.copy_Bps = 1 / copy.slope;
  std::vector<double> fractions, intercepts;
  for (const auto& [name, xt] : per_kernel) {
    // the GEMMs' memory side is no memory-bound kernel's rate
    if (name == "copy" || name == kHostCopyKernel || name.starts_with("gemm")) continue;
    const LineFit k = fit_line_relative(xt.first, xt.second);
    fractions.push_back((1 / k.slope) / f.copy_Bps);
    intercepts.push_back(k.intercept);
  }
  f.efficiency = std::clamp(median_of(fractions), 1e-3, 1.0);
  f.launch_s = std::max(0.0, median_of(intercepts));
  return f;
}

LinkFit fit_link(const std::vector<CommPoint>& points) {
  std::vector<double> x, t;
  for (const CommPoint& p : points)
    if (p.op == "send_recv") {
      x.push_back(p.bytes);
      t.push_back(p.seconds.median);
    }
  if (x.size() < 2) throw std::invalid_argument("fit_link: needs send_recv at two sizes or more");
  LinkFit f;
  f.latency_s = std::max(0.0, fit_line_relative(x, t).intercept);
  // bus rate of each point once its latency steps are out; the best is the link's
  // bandwidth, taken only where the transfer is at least half the time (in a
  // latency-bound point, a small error of the latency makes the rate anything)
  std::vector<double> rates;
  for (const CommPoint& p : points) {
    const double transfer_s = std::max(p.seconds.median - ring_steps(p) * f.latency_s, 1e-12);
    rates.push_back(p.bus_factor() * p.bytes / transfer_s);
    if (transfer_s >= 0.5 * p.seconds.median) f.bandwidth_Bps = std::max(f.bandwidth_Bps, rates.back());
  }
  if (f.bandwidth_Bps <= 0) throw std::invalid_argument("fit_link: every point is latency-bound; measure larger sizes");
  std::map<double, std::vector<double>> by_bytes;
  std::map<std::string, std::map<double, std::vector<double>>> by_op;
  for (std::size_t i = 0; i < points.size(); ++i) {
    by_bytes[points[i].bytes].push_back(rates[i] / f.bandwidth_Bps);
    by_op[points[i].op][points[i].bytes].push_back(rates[i] / f.bandwidth_Bps);
  }
  f.curve = median_curve(by_bytes);
  // each collective its own curve too: an MPI library's reduce-scatter may run far below
  // its all-gather, which one median curve would hide
  for (const auto& [op, sizes] : by_op) f.by_op[op] = median_curve(sizes, kMinKernelEfficiency);
  return f;
}

}  // namespace twinsim::calibrate
