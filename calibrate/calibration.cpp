#include "calibrate/calibration.hpp"
#include "io/whole_file.hpp"
#include "exec/runtime/mpi_communicator.hpp"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "calibrate/measured_busbw.hpp"
#include "kernels/cpu/gemm.hpp"
#include "models/layer_ops.hpp"

namespace twinsim::calibrate {

namespace {

using nlohmann::json;

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string spread(const Stats& s) {
  return "median " + fmt("%.3g", s.median * 1e6) + " us of " + std::to_string(s.repeats) + ", spread " +
         fmt("%.0f", 100 * s.spread()) + "%";
}

void write_curve(std::ostringstream& y, const std::string& indent, const std::vector<CurvePoint>& curve) {
  for (const CurvePoint& p : curve)
    y << indent << "- [" << fmt("%.6g", p.size) << ", " << fmt("%.4g", p.efficiency) << "]\n";
}

void write_pass_curves(std::ostringstream& y, const std::string& indent, const KernelCurves& k) {
  if (!k.fwd.empty()) {
    y << indent << "fwd:\n";
    write_curve(y, indent + "  ", k.fwd);
  }
  if (!k.bwd.empty()) {
    y << indent << "bwd:\n";
    write_curve(y, indent + "  ", k.bwd);
  }
}

const char* pass_name(GemmPass pass) {
  return pass == GemmPass::fwd ? "fwd" : pass == GemmPass::dgrad ? "dgrad" : "wgrad";
}

// The 16-bit path's peak, or fp32's where it was not measured.
double peak_16bit(const GemmFit& gemm, Dtype dtype) {
  const auto it = gemm.peak_16bit.find(dtype);
  return it == gemm.peak_16bit.end() ? gemm.peak_flops : it->second;
}

std::vector<CommPoint> link_points(const Calibration& c) {
  std::vector<CommPoint> v;
  for (const CommPoint& p : c.comm)
    if (p.ranks == c.link_ranks) v.push_back(p);
  return v;
}

// The cluster's core_sharing mapping (SCENARIO.md): the loader speeds a one-rank plan's
// kernels up by these, the curves being taken with every core busy.
void write_core_sharing(std::ostringstream& y, const CoreSharing& s) {
  if (s.points.empty()) return;
  y << "# the same kernels (the quick sweeps) alone on the first core against beside " << s.busy_processes - 1
    << " other busy\n# process(es) running them, as the curves above were taken: a plan with one rank on this machine\n"
    << "# runs its GEMMs and memory-bound kernels this much faster (median of shared / alone)\n"
    << "core_sharing: {busy_ranks: " << s.busy_processes << ", alone_gemm_speedup: " << fmt("%.4f", s.gemm_speedup)
    << ", alone_memory_speedup: " << fmt("%.4f", s.memory_speedup) << "}\n";
  for (const SharingPoint& p : s.points)
    y << "#   " << p.name << ": alone " << fmt("%.3g", p.alone.median * 1e6) << " us, shared "
      << fmt("%.3g", p.shared.median * 1e6) << " us (x" << fmt("%.2f", p.speedup()) << ")\n";
}

// ZeRO-Offload's host side (host_path.hpp): on this machine the "GPU" and the host share one
// DRAM, so its copies are memcpy out of cache and its update the executor's CPU AdamW.
std::string host_yaml(const Calibration& c, const Fitted& f) {
  const double copy_Bps = f.host.copy_Bps > 0 ? f.host.copy_Bps : f.memory.copy_Bps;
  const std::string copy = fmt("%.3f", copy_Bps / 1e9);
  std::string adam;
  if (f.host.adam_s_per_param > 0) adam = ", adam_ns_per_param: " + fmt("%.3f", f.host.adam_s_per_param * 1e9);
  return "# the CPU memory plan.offload_optimizer moves state to: the same DRAM. h2d/d2h: memcpy of\n"
         "# 256 KiB..16 MiB buffers out of cache (median, bytes moved one way); memory_bandwidth: the\n"
         "# fitted memcpy rate above (the machine's, shared by the ranks that update at once);\n"
         "# adam_ns_per_param: the executor's CPU AdamW per fp32 parameter (the adamw points, median)\n"
         "host: {h2d_GBps: " +
         copy + ", d2h_GBps: " + copy + ", memory_bandwidth_GBps: " + fmt("%.3f", f.memory.copy_Bps / 1e9) +
         ", memory_GiB: " + fmt("%.2f", c.memory_GiB) + adam + "}\n";
}

}  // namespace

json stats_json(const Stats& s) {
  return {{"median_s", s.median}, {"mean_s", s.mean}, {"min_s", s.min}, {"max_s", s.max}, {"repeats", s.repeats}};
}

Stats stats_from(const json& j) {
  Stats s;
  s.median = j.at("median_s").get<double>();
  s.min = j.at("min_s").get<double>();
  s.max = j.at("max_s").get<double>();
  s.repeats = j.at("repeats").get<int>();
  s.mean = j.value("mean_s", s.median);  // files written before the mean was kept
  return s;
}

Fitted fit_all(const Calibration& c) {
  Fitted f;
  f.memory = fit_memory(c.memory);
  // A fixed cost per call cannot exceed the fastest call measured: on a CPU the kernels'
  // intercepts are cache effects more than a launch, and the GEMM fit takes it out.
  double fastest = f.memory.launch_s;
  for (const MemoryPoint& p : c.memory) fastest = std::min(fastest, 0.5 * p.seconds.median);
  for (const GemmPoint& p : c.gemm) fastest = std::min(fastest, 0.5 * p.seconds.median);
  f.memory.launch_s = fastest;
  f.gemm = fit_gemm(c.gemm, f.memory.launch_s);
  if (!c.attention.empty()) {
    f.attention = fit_attention(c.attention, f.gemm.peak_flops, f.memory.launch_s);
    f.attention_by_head_dim = fit_attention_by_head_dim(c.attention, f.gemm.peak_flops, f.memory.launch_s);
    f.kv_attention = fit_kv_attention(c.attention, f.gemm.peak_flops, f.memory.launch_s);
  }
  f.kernels = fit_kernels(c.memory, f.memory);
  f.kernels_16bit = fit_kernels(c.memory, f.memory, true);
  // the serving attention's memory side sits with the memory-bound kernels' curves
  if (KernelCurves kv = fit_kv_attention_memory(c.attention, f.memory); !kv.fwd.empty())
    f.kernels[std::string(kKvCacheAttentionKernel)] = std::move(kv);
  if (KernelCurves kv = fit_kv_attention_memory(c.attention, f.memory, true); !kv.fwd.empty())
    f.kernels[std::string(kMlaDecodeAttentionKernel)] = std::move(kv);
  if (!c.comm.empty()) f.link = fit_link(link_points(c));
  f.host = fit_host_path(c.memory);
  const double l3 = c.cache_MiB * 1048576.0, warm = warm_working_set_bytes(c.memory);
  f.cache_bytes = warm <= 0 ? l3 : l3 > 0 ? std::min(warm, l3) : warm;
  f.reuse_time = reuse_time_curve(c.memory);
  f.reuse_time_alone = reuse_time_curve(c.memory, kGemmReuseAloneKernel);
  f.rows_time = rows_time_curve(c.memory);
  return f;
}

namespace {

// gemm_reuse_time: the reuse sweep's times over the cold one by working set (none: "").
// and, as a comment, the processes that shared the L3 while it was measured.
std::string reuse_time_yaml(const std::vector<CurvePoint>& curve, int ranks) {
  if (curve.empty()) return "";
  std::ostringstream y;
  y << "  # the same 4-row GEMM's time by the working set it re-uses, over its time out of cache: the\n"
    << "  # serving GEMMs' memory side at their pass's working set (bytes, fraction of cold)\n"
    << "  gemm_reuse_time:\n";
  for (const CurvePoint& p : curve) y << "    - [" << fmt("%.0f", p.size) << ", " << fmt("%.4f", p.efficiency) << "]\n";
  // Recorded as a comment, not applied: reading a lone rank's curve at its share of the L3
  // (the gemm_reuse_ranks key, hardware/core_sharing.hpp) predicted tiny-gpt's TPOT -55% in a
  // quiet validate where the curve as measured read +10% (s14; calibrate/README.md).
  if (ranks > 0) y << "  # measured by " << ranks << " processes at once (gemm_reuse_ranks, not applied)\n";
  return y.str();
}

// gemm_reuse_time_alone: the sweep again with no other process running (none: ""), which a
// plan of one rank a machine reads instead (hardware/core_sharing.hpp apply_cache_sharing).
std::string reuse_time_alone_yaml(const std::vector<CurvePoint>& curve) {
  if (curve.empty()) return "";
  std::ostringstream y;
  y << "  # the same with no other process running: a plan of one rank a machine has the cache to itself\n"
    << "  gemm_reuse_time_alone:\n";
  for (const CurvePoint& p : curve) y << "    - [" << fmt("%.0f", p.size) << ", " << fmt("%.4f", p.efficiency) << "]\n";
  return y.str();
}

// gemm_rows_time: the reuse GEMM's time by rows over its 4-row time (none, or 4 rows only: "").
std::string rows_time_yaml(const std::vector<CurvePoint>& curve) {
  if (curve.size() < 2) return "";
  std::ostringstream y;
  y << "  # the same GEMM's time by rows over its 4-row time (4 MiB of weights in rotation): a serving\n"
    << "  # GEMM of m rows a call (an expert's) costs the reuse curve's time times this at m\n"
    << "  gemm_rows_time:\n";
  for (const CurvePoint& p : curve) y << "    - [" << fmt("%.0f", p.size) << ", " << fmt("%.4f", p.efficiency) << "]\n";
  return y.str();
}

// The header and the gpu mapping's scalar figures.
void write_gpu_head(std::ostringstream& y, const Calibration& c, const Fitted& f, const std::string& name) {
  y << "# " << name << ": written by `twinsim calibrate` (calibrate/); do not edit by hand, re-run it.\n"
    << "# " << c.machine << "\n"
    << (c.cpu_model.empty() ? "" : "# cpu_model: " + c.cpu_model + "\n")
    << (c.cpu_layout.empty() ? "" : "# cpu_layout: " + c.cpu_layout + "\n")
    << "# Every figure is the median of repeated runs of the executor's own kernels\n"
    << "# (kernels/cpu) and MPI communicator (exec/runtime); the spread, (max-min)/median,\n"
    << "# is in the comments. Use it as a scenario's whole cluster (paste it under `cluster:`),\n"
    << "# or its gpu mapping as `cluster: {preset: host, gpu: {...}}`; `twinsim validate` does\n"
    << "# the former by itself. One MPI rank counts as one GPU.\n"
    << "gpu:\n"
    << "  memory_GiB: " << fmt("%.2f", c.memory_GiB) << "   # the machine's RAM (MemTotal), shared by every rank\n"
    << "  # bandwidth of memcpy, fitted t = a + bytes/bw over 32 KiB..16 MiB buffers (cache to DRAM)\n"
    << "  hbm_bandwidth_GBps: " << fmt("%.3f", f.memory.copy_Bps / 1e9) << "\n"
    << "  # kernels not listed under kernel_efficiency: the median fitted bandwidth of those that are, over memcpy's\n"
    << "  memory_efficiency: " << fmt("%.3f", f.memory.efficiency) << "\n"
    << "  workspace_MiB: " << fmt("%.4f", kernels::cpu::kGemmWorkspaceFloats * sizeof(float) / 1048576.0)
    << "  # the executor's GEMM workspace (kernels/cpu/gemm.hpp), as cuBLAS's; no NCCL\n"
    << "  # the working set of weights a decode's 4-row GEMMs still ran warm from, pass after pass,\n"
    << "  # while every other core did the same (gemm_reuse points below; cache_reuse.hpp); sysfs L3 "
    << fmt("%.1f", c.cache_MiB) << " MiB\n"
    << "  cache_MiB: " << fmt("%.1f", f.cache_bytes / 1048576.0) << "\n"
    << reuse_time_yaml(f.reuse_time, c.reuse_ranks) << reuse_time_alone_yaml(f.reuse_time_alone)
    << rows_time_yaml(f.rows_time)
    << "  # fixed cost of one op: median intercept of the kernels' fits, at most half the fastest call ("
    << fmt("%.3f", f.memory.launch_s * 1e6)
    << "), plus the executor's host time per op (op_host.hpp: " << fmt("%.3f", c.op_host.median * 1e6) << " us, spread "
    << fmt("%.0f", c.op_host.spread() * 100) << "%)\n"
    << "  kernel_launch_us: " << fmt("%.3f", per_op_fixed_s(f.memory.launch_s, c.op_host.median) * 1e6) << "\n"
    << "  # fp32: the best GEMM throughput of any shape below; bf16 / fp16 (16-bit operands widened\n"
    << "  # into fp32 tiles): fp32's times the median speed of that path against fp32 on the\n"
    << "  # executor's shapes (listed at the end)\n"
    << "  peak_tflops:\n"
    << "    fp32: " << fmt("%.5f", f.gemm.peak_flops / 1e12) << "\n"
    << "    bf16: " << fmt("%.5f", peak_16bit(f.gemm, Dtype::bf16) / 1e12) << "\n"
    << "    fp16: " << fmt("%.5f", peak_16bit(f.gemm, Dtype::fp16) / 1e12) << "\n"
    << "  # achieved fraction of the peak by GEMM FLOPs, the linear layer's forward (y = x W^T),\n"
    << "  # dgrad (dx = dy W) and wgrad (dW = dy^T x) apart, with operands out of cache; the median\n"
    << "  # over the shapes of that size, then a running median of three neighbours\n";
}

// The GEMM efficiency curves, each point with the shapes measured at its FLOPs.
void write_gemm_curves(std::ostringstream& y, const Calibration& c, const Fitted& f) {
  const struct {
    const char* key;
    GemmPass pass;
    const std::vector<CurvePoint>& curve;
  } passes[] = {{"gemm_efficiency", GemmPass::fwd, f.gemm.curve},
                {"gemm_dgrad_efficiency", GemmPass::dgrad, f.gemm.dgrad},
                {"gemm_wgrad_efficiency", GemmPass::wgrad, f.gemm.wgrad}};
  for (const auto& [key, pass, curve] : passes) {
    if (curve.empty()) continue;
    y << "  " << key << ":\n";
    for (const CurvePoint& p : curve) {
      y << "    - [" << fmt("%.6g", p.size) << ", " << fmt("%.4f", p.efficiency) << "]   #";
      for (const GemmPoint& g : c.gemm)
        if (g.flops == p.size && g.pass == pass && g.dtype == Dtype::fp32) y << " " << g.m << "x" << g.n << "x" << g.k << ": " << spread(g.seconds) << ";";
      y << "\n";
    }
  }
}

// Attention's curves and the memory-bound kernels' (fp32 and 16-bit).
void write_kernel_curves(std::ostringstream& y, const Fitted& f) {
  if (!f.attention.fwd.empty() || !f.attention.bwd.empty()) {
    y << "  # flash attention (the executor's causal kernel): achieved fraction of the peak by\n"
      << "  # FLOPs of the op list's full-square count, forward and backward\n"
      << "  attention_efficiency:\n";
    write_pass_curves(y, "    ", f.attention);
  }
  if (!f.attention_by_head_dim.empty()) {
    y << "  # the same per head width: narrow heads pay the softmax per score over fewer FLOPs\n"
      << "  attention_efficiency_by_head_dim:\n";
    for (const auto& [width, curves] : f.attention_by_head_dim) {
      y << "    " << width << ":\n";
      write_pass_curves(y, "      ", curves);
    }
  }
  if (!f.kv_attention.empty()) {
    y << "  # serving attention over a KV cache (kernels/cpu/kv_cache_attention): prefills, GQA or\n"
      << "  # not, achieved fraction of the peak by FLOPs of the full rectangle (decode steps are its\n"
      << "  # memory side: kernel_efficiency kv_cache_attention, by the bytes of the K/V read)\n"
      << "  kv_attention_efficiency:\n";
    write_curve(y, "    ", f.kv_attention);
  }
  y << "  # the op list's memory-bound kernels: achieved fraction of hbm_bandwidth_GBps on the\n"
    << "  # bytes the simulator counts for each (calibrate/compute_bench.cpp), by those bytes;\n"
    << "  # gemm / gemm_cached: the memory side of the GEMM roofline, from GEMMs of 1-16 rows\n"
    << "  # with operands out of cache / re-used, rotating through half of cache_MiB; kv_cache_attention:\n"
    << "  # the memory side of serving attention, from decode steps with caches out of cache;\n"
    << "  # kv_cache_attention_mla: MLA's absorbed decode steps' (4 heads over one latent row of 80)\n"
    << "  kernel_efficiency:\n";
  for (const auto& [name, curves] : f.kernels) {
    y << "    " << name << ":\n";
    write_pass_curves(y, "      ", curves);
  }
  if (!f.kernels_16bit.empty()) {
    y << "  # the same kernels on bf16 data, by the bytes a 16-bit run counts (2 per element; adamw\n"
      << "  # and sgd with bf16 grads): the CPU widens every element to fp32 for its math\n"
      << "  kernel_efficiency_16bit:\n";
    for (const auto& [name, curves] : f.kernels_16bit) {
      y << "    " << name << ":\n";
      write_pass_curves(y, "      ", curves);
    }
  }
}

// Every point measured, as comments.
void write_measured_points(std::ostringstream& y, const Calibration& c) {
  y << "  # measured (full-square FLOPs, causal kernel):\n";
  for (const AttentionPoint& a : c.attention)
    y << "  #   b" << a.batch << " s" << a.seq << " h" << a.heads << " d" << a.head_dim
      << (a.kv_cache
              ? " kv" + std::to_string(a.kv_heads) + (a.v_head_dim > 0 ? " v" + std::to_string(a.v_head_dim) : "") +
                    " after " + std::to_string(a.cached) + " cached"
              : (a.backward ? " bwd" : " fwd"))
      << ": " << fmt("%.4f", a.flops / a.seconds.median / 1e12) << " TFLOP/s, " << spread(a.seconds) << "\n";
  y << "  # memory-bound kernels (bytes: the simulator's count for the call; gemm_reuse: the working set):\n";
  for (const MemoryPoint& m : c.memory)
    if (m.kernel == kGemmReuseKernel || m.kernel == kGemmReuseAloneKernel)
      y << "  #   " << m.kernel << " over " << fmt("%.0f", m.bytes / 1048576) << " MiB: " << spread(m.seconds)
        << " a call\n";
    else
      y << "  #   " << m.kernel << (m.half ? " bf16" : "") << (m.backward ? " bwd " : " ") << fmt("%.0f", m.bytes)
        << " B: " << fmt("%.2f", m.bytes / m.seconds.median / 1e9) << " GB/s, " << spread(m.seconds) << "\n";
  y << "  # GEMMs on 16-bit data (the linear layer's passes; the fp32 ones are listed with the curves):\n";
  for (const GemmPoint& g : c.gemm)
    if (g.dtype != Dtype::fp32)
      y << "  #   " << to_string(g.dtype) << " " << g.m << "x" << g.n << "x" << g.k << " " << pass_name(g.pass) << ": "
        << fmt("%.4f", g.flops / g.seconds.median / 1e12) << " TFLOP/s, " << spread(g.seconds) << "\n";
}

// The host, core sharing and the link's figures (a file without collectives ends at the host).
void write_host_and_link(std::ostringstream& y, const Calibration& c, const Fitted& f) {
  const std::string host = host_yaml(c, f);
  if (f.link.bandwidth_Bps <= 0) {
    y << host;
    write_core_sharing(y, c.sharing);
    y << "gpus_per_node: 64\n";
    return;
  }
  y << "  nvlink_GBps: " << fmt("%.3f", f.link.bandwidth_Bps / 1e9) << "   # = intra_node.bandwidth_GBps\n"
    << host;
  write_core_sharing(y, c.sharing);
  y << "gpus_per_node: 64   # room for 64 ranks on this one machine\n"
    << "# the slowest of " << c.link_ranks << " ranks running the same work from a barrier, behind their mean\n"
    << "# (the mean of " << c.straggler.repeats << " repeats, the expected wait; median " << fmt("%.3f", c.straggler.median)
    << ", from " << fmt("%.3f", c.straggler.min) << " to " << fmt("%.3f", c.straggler.max)
    << "): a blocking collective waits this fraction of the compute since the last\n"
    << "straggler: " << fmt("%.4f", c.straggler.mean) << "\n"
    << "# MPI over shared memory, fitted on " << c.link_ranks << " ranks: send/recv's fitted latency per message step,\n"
    << "# the best bus rate (nccl-tests busbw) of any collective once its ring's latency steps\n"
    << "# are out, and the efficiency by buffer bytes against it (median over all-reduce,\n"
    << "# all-gather, reduce-scatter, send/recv); each call timed alone after every rank wrote\n"
    << "# " << fmt("%.1f", c.comm_evict_MiB) << " MiB of its own, as a step's ops take the caches between two collectives\n"
    << "intra_node:\n"
    << "  bandwidth_GBps: " << fmt("%.3f", f.link.bandwidth_Bps / 1e9) << "\n"
    << "  latency_us: " << fmt("%.3f", f.link.latency_s * 1e6) << "\n"
    << "  efficiency:\n";
  for (const CurvePoint& p : f.link.curve) y << "    - [" << fmt("%.0f", p.size) << ", " << fmt("%.4f", p.efficiency) << "]\n";
  y << "  # each collective measured: its own curve (the curve above is for the others)\n"
    << "  efficiency_by_op:\n";
  for (const auto& [op, curve] : f.link.by_op) {
    y << "    " << op << ":\n";
    write_curve(y, "      ", curve);
  }
  y << "  # the calls' own times (the medians above as busbw): a group on this machine is priced at\n"
    << "  # these, the curves above serve the protocol model elsewhere (calibrate/measured_busbw.hpp)\n"
    << measured_busbw_yaml(c.comm, "  ");
  y << "# there is no second machine: the same figures, one \"NIC\"\n"
    << "inter_node: {bandwidth_GBps: " << fmt("%.3f", f.link.bandwidth_Bps / 1e9) << ", nics_per_node: 1, latency_us: "
    << fmt("%.3f", f.link.latency_s * 1e6) << "}\n"
    << "# collectives measured (ranks, op, bytes: busbw, spread):\n";
  for (const CommPoint& p : c.comm)
    y << "#   " << p.ranks << " " << p.op << " " << fmt("%.0f", p.bytes) << ": " << fmt("%.3f", p.busbw_Bps() / 1e9)
      << " GB/s, " << spread(p.seconds) << "\n";
}

}  // namespace

std::string hardware_yaml(const Calibration& c, const Fitted& f, const std::string& name) {
  std::ostringstream y;
  write_gpu_head(y, c, f, name);
  write_gemm_curves(y, c, f);
  write_kernel_curves(y, f);
  write_measured_points(y, c);
  write_host_and_link(y, c, f);
  return y.str();
}

json comm_points_json(const std::vector<CommPoint>& points) {
  json a = json::array();
  for (const CommPoint& p : points)
    a.push_back({{"op", p.op}, {"ranks", p.ranks}, {"bytes", p.bytes}, {"seconds", stats_json(p.seconds)},
                 {"busbw_GBps", p.busbw_Bps() / 1e9}});
  return a;
}

std::vector<CommPoint> comm_points_from_json(const json& j) {
  std::vector<CommPoint> v;
  for (const json& p : j)
    v.push_back({p.at("op").get<std::string>(), p.at("ranks").get<int>(), p.at("bytes").get<double>(),
                 stats_from(p.at("seconds"))});
  return v;
}

json points_json(const Calibration& c) {
  json gemm = json::array(), mem = json::array(), att = json::array();
  for (const GemmPoint& g : c.gemm)
    gemm.push_back({{"m", g.m}, {"n", g.n}, {"k", g.k}, {"flops", g.flops}, {"seconds", stats_json(g.seconds)},
                    {"pass", pass_name(g.pass)}, {"dtype", to_string(g.dtype)}});
  for (const MemoryPoint& m : c.memory)
    mem.push_back({{"kernel", m.kernel}, {"backward", m.backward}, {"bytes", m.bytes}, {"seconds", stats_json(m.seconds)},
                   {"bf16", m.half}});
  for (const AttentionPoint& a : c.attention)
    att.push_back({{"batch", a.batch},
                   {"seq", a.seq},
                   {"heads", a.heads},
                   {"head_dim", a.head_dim},
                   {"backward", a.backward},
                   {"flops", a.flops},
                   {"seconds", stats_json(a.seconds)},
                   {"kv_cache", a.kv_cache},
                   {"cached", a.cached},
                   {"kv_heads", a.kv_heads},
                   {"bytes", a.bytes},
                   {"v_head_dim", a.v_head_dim}});
  json sharing = json::array();
  for (const SharingPoint& p : c.sharing.points)
    sharing.push_back({{"name", p.name}, {"gemm", p.gemm}, {"alone", stats_json(p.alone)}, {"shared", stats_json(p.shared)}});
  return {{"machine", c.machine},
          {"cpu_layout", c.cpu_layout},
          {"core_sharing", sharing},
          {"gemm", gemm},
          {"memory", mem},
          {"attention", att},
          {"comm", comm_points_json(c.comm)},
          {"straggler_fraction", stats_json(c.straggler)},
          {"op_host_s", stats_json(c.op_host)}};
}

void comm_sweep_as_rank(const CommSweepOptions& o, int repeats, const std::string& out_json) {
  exec::MpiSession session;
  auto world = exec::MpiCommunicator::world();
  const std::vector<CommPoint> points = comm_sweep(*world, o);
  const Stats straggler = straggler_sweep(*world, repeats);
  if (world->rank() != 0) return;
  const nlohmann::json out{{"points", comm_points_json(points)}, {"straggler", stats_json(straggler)}};
  io::write_file_whole(out_json, out.dump(1) + "\n");
}

}  // namespace twinsim::calibrate
