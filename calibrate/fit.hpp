#pragma once
// Fits microbenchmark medians into the figures the simulator's cost model takes
// (hardware/gpu_spec.hpp, SCENARIO.md Extensions): a GEMM peak and efficiency curve,
// a memory bandwidth with the kernels' achieved fraction and a fixed cost per call, and a
// link's bandwidth, latency and efficiency curve.
#include <map>
#include <string>
#include <vector>

#include "calibrate/comm_bench.hpp"
#include "calibrate/compute_bench.hpp"

namespace twinsim::calibrate {

struct CurvePoint {
  double size = 0;  // FLOPs (GEMM) or bytes (link)
  double efficiency = 0;
};

// t = intercept + slope * x, least squares on relative error (each point weighs 1/t^2),
// so a 10 us point counts as much as a 10 ms one.
struct LineFit {
  double intercept = 0, slope = 0;
};
LineFit fit_line_relative(const std::vector<double>& x, const std::vector<double>& t);

// The non-decreasing sequence nearest `y` in least squares, every value weighing alike:
// pool-adjacent-violators (Barlow et al. 1972, Statistical Inference under Order
// Restrictions, ch. 1), each run of values that would fall pooled into its mean. For a
// quantity that cannot fall as its key grows, one noisy value moves only its own pool
// (a running maximum would carry it over every later value).
std::vector<double> isotonic_non_decreasing(const std::vector<double>& y);

struct GemmFit {
  double peak_flops = 0;  // the best throughput any shape and pass reached
  // per pass, by FLOPs: median achieved fraction of the peak, then a running median of 3
  // (`curve` the forward's; dgrad and wgrad empty when no point measured them)
  std::vector<CurvePoint> curve, dgrad, wgrad;
  // bf16 / fp16 (the GEMM's 16-bit path): the fp32 peak times the median over the
  // measured shapes and passes of fp32's time over the 16-bit one's; the curves are shared
  std::map<Dtype, double> peak_16bit;
};
// The simulator adds `launch_s` to a GEMM's math time, so it is taken out of each point.
GemmFit fit_gemm(const std::vector<GemmPoint>& points, double launch_s);

struct MemoryFit {
  double copy_Bps = 0;     // memcpy's bandwidth: the "HBM" figure
  double efficiency = 0;   // the kernels' bandwidth as a fraction of it (median over kernels)
  double launch_s = 0;     // fixed cost per call (median of the kernels' intercepts, >= 0)
};
MemoryFit fit_memory(const std::vector<MemoryPoint>& points);

// Floor of a measured kernel efficiency: GeLU on a CPU reaches under 1% of memcpy's rate.
constexpr double kMinKernelEfficiency = 1e-4;

// Forward and backward curves of one kernel (either may be empty: not measured).
struct KernelCurves {
  std::vector<CurvePoint> fwd, bwd;
};

// Fused attention: achieved fraction of the GEMM peak by FLOPs (full-square count), the
// launch cost taken out as for GEMMs.
using AttentionFit = KernelCurves;
AttentionFit fit_attention(const std::vector<AttentionPoint>& points, double peak_flops, double launch_s);
// The same per head width (AttentionPoint::head_dim), when two widths or more were measured.
std::map<int, AttentionFit> fit_attention_by_head_dim(const std::vector<AttentionPoint>& points, double peak_flops,
                                                      double launch_s);
// The serving kernel's prefill points (AttentionPoint::kv_cache, seq > 1), by FLOPs.
std::vector<CurvePoint> fit_kv_attention(const std::vector<AttentionPoint>& points, double peak_flops, double launch_s);
// Its memory side from the decode points (seq 1): a decode step reads the whole KV cache
// for 4 FLOPs per element read, so it runs at a bandwidth, the same per byte with or
// without GQA where by FLOPs the two differ by the group size (kv 4 against 2 heads:
// 3.3 and 3.2 GB/s, 160 and 81 us, this host, 2026-11-22). Fraction of memcpy's
// bandwidth on AttentionPoint::bytes, as the memory-bound kernels (fwd only). `mla`: from
// MLA's absorbed decode points (v_head_dim > 0) alone, its kernel_efficiency
// kv_cache_attention_mla; otherwise from the others.
KernelCurves fit_kv_attention_memory(const std::vector<AttentionPoint>& points, const MemoryFit& memory,
                                     bool mla = false);

// Each memory-bound kernel of the op list ("gelu", "layernorm", ...): achieved fraction
// of memcpy's bandwidth on the bytes the simulator counts for it (MemoryPoint::bytes),
// by those bytes, forward and backward apart, then a running median of 3.
// `half`: the points on bf16 data (kernel_efficiency_16bit), else the fp32 ones.
std::map<std::string, KernelCurves> fit_kernels(const std::vector<MemoryPoint>& points, const MemoryFit& memory,
                                                bool half = false);

struct LinkFit {
  double bandwidth_Bps = 0;  // best bus rate of any point once its latency steps are out
  double latency_s = 0;      // per message step: send/recv's intercept
  std::vector<CurvePoint> curve;  // by bytes: median over collectives of the achieved fraction
  std::map<std::string, std::vector<CurvePoint>> by_op;  // by bytes, each collective apart
};
// Points of one rank count. A ring collective's time is steps x latency plus
// bus_factor x bytes / (bandwidth x efficiency) (Thakur et al. 2005 §4; nccl-tests busbw),
// so each point's efficiency is what is left once its latency steps are taken out.
LinkFit fit_link(const std::vector<CommPoint>& points);

}  // namespace twinsim::calibrate
