// The `cluster:` section and the GPU it names (SCENARIO.md; hardware/catalog/README.md).
#include <algorithm>
#include <charconv>
#include <cmath>

#include "hardware/stack_spec.hpp"
#include "models/layer_ops.hpp"
#include "scenario/errors.hpp"
#include "scenario/mapping_reader.hpp"
#include "scenario/read_sections.hpp"

namespace twinsim {

namespace {

constexpr double kGB = 1e9;
constexpr double kGiB = 1073741824.0;


// A list of [size, value] pairs, sizes increasing, values in (0, max_value]; `value_name`
// and `max_text` (max_value as written) say what the value is in messages.
std::vector<CurvePoint> read_pairs(const YAML::Node& n, const std::string& where, double max_value,
                                   const std::string& value_name, const std::string& max_text) {
  std::vector<CurvePoint> curve;
  if (!n.IsDefined() || n.IsNull()) return curve;
  if (!n.IsSequence()) throw ScenarioError(where, "", "must be a list of [size, " + value_name + "] pairs");
  for (std::size_t i = 0; i < n.size(); ++i) {
    double size = 0, eff = 0;
    const bool ok = n[i].IsSequence() && n[i].size() == 2 &&
                    YAML::convert<double>::decode(n[i][0], size) &&
                    YAML::convert<double>::decode(n[i][1], eff);
    if (!ok || !(size > 0) || !(eff > 0) || !(eff <= max_value) || !std::isfinite(size))
      throw ScenarioError(where + "[" + std::to_string(i) + "]", "",
                          "must be [size > 0, " + value_name + " in (0, " + max_text + "]]");
    if (!curve.empty() && size <= curve.back().x)
      throw ScenarioError(where + "[" + std::to_string(i) + "]", "", "sizes must increase");
    curve.push_back({size, eff});
  }
  return curve;
}

// The pairs as an efficiency curve's points (EfficiencyPoint{size, efficiency}).
std::vector<EfficiencyPoint> efficiency_points(const std::vector<CurvePoint>& pairs) {
  std::vector<EfficiencyPoint> curve;
  for (const CurvePoint& p : pairs) curve.push_back({p.x, p.y});
  return curve;
}

std::vector<EfficiencyPoint> read_curve_up_to(MappingReader& r, const std::string& key, double max_value) {
  return efficiency_points(
      read_pairs(r.child(key), r.key_path(key), max_value, "efficiency", max_value == 1.0 ? "1" : "2"));
}

std::vector<EfficiencyPoint> read_curve(MappingReader& r, const std::string& key) {
  return read_curve_up_to(r, key, 1.0);
}

// {fwd: curve, bwd: curve}, either optional; efficiencies up to `max_value`.
PassCurves read_pass_curves_up_to(MappingReader& parent, const std::string& key, double max_value) {
  PassCurves c;
  if (!parent.has(key)) return c;
  const YAML::Node n = parent.child(key);
  if (!n.IsMap()) throw ScenarioError(parent.key_path(key), "", "must be a mapping {fwd: curve, bwd: curve}");
  MappingReader r(n, parent.key_path(key));
  c.fwd = read_curve_up_to(r, "fwd", max_value);
  c.bwd = read_curve_up_to(r, "bwd", max_value);
  r.reject_unknown();
  if (c.empty()) throw ScenarioError(parent.key_path(key), "", "needs a fwd or bwd curve");
  return c;
}

PassCurves read_pass_curves(MappingReader& parent, const std::string& key) {
  return read_pass_curves_up_to(parent, key, 1.0);
}

// A mapping `key` of names (each one of `allowed`, which `names` lists for the message)
// to values `read_value(reader, name)` reads.
template <typename Value, typename ReadValue>
std::map<std::string, Value, std::less<>> read_named(MappingReader& r, const std::string& key,
                                                     const std::vector<std::string_view>& allowed,
                                                     const std::string& names, ReadValue read_value) {
  std::map<std::string, Value, std::less<>> values;
  if (!r.has(key)) return values;
  const std::string where = r.key_path(key);
  const YAML::Node n = r.child(key);
  if (!n.IsMap()) throw ScenarioError(where, "", "must be a mapping of " + names + " to curves");
  MappingReader entries(n, where);
  for (const auto& entry : n) {
    const std::string name = entry.first.as<std::string>();
    if (std::find(allowed.begin(), allowed.end(), name) == allowed.end())
      throw ScenarioError(join_key(where, name), "", "is not " + names + " (" + [&] {
        std::string list;
        for (std::string_view a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
        return list;
      }() + ")");
    values[name] = read_value(entries, name);
  }
  return values;
}

// kernel_efficiency or kernel_efficiency_16bit (key): {gelu: {fwd: curve, bwd: curve}, ...}
std::map<std::string, PassCurves, std::less<>> read_kernel_efficiency(MappingReader& r, const std::string& key) {
  std::vector<std::string_view> names(kKernelNames.begin(), kKernelNames.end());
  names.push_back(kGemmKernel);
  names.push_back(kGemmCachedKernel);
  names.push_back(kKvCacheAttentionKernel);
  names.push_back(kMlaDecodeAttentionKernel);
  return read_named<PassCurves>(r, key, names, "a kernel the op list names", read_pass_curves);
}

// A mapping `key` of integer keys in [1, max_key] to values read_value(entries, name) reads;
// `mapping` and `each` say what the mapping and one key must be, for the errors.
template <typename Value, typename ReadValue>
std::map<int, Value> read_int_keyed(MappingReader& r, const std::string& key, int max_key, const std::string& mapping,
                                    const std::string& each, ReadValue read_value) {
  std::map<int, Value> values;
  if (!r.has(key)) return values;
  const std::string where = r.key_path(key);
  const YAML::Node n = r.child(key);
  if (!n.IsMap()) throw ScenarioError(where, "", "must be a mapping of " + mapping);
  MappingReader entries(n, where);
  for (const auto& entry : n) {
    const std::string name = entry.first.as<std::string>();
    int value = 0;
    const auto [end, error] = std::from_chars(name.data(), name.data() + name.size(), value);
    if (error != std::errc() || end != name.data() + name.size() || value < 1 || value > max_key)
      throw ScenarioError(join_key(where, name), name,
                          "must be " + each + ", an integer in [1, " + std::to_string(max_key) + "]");
    values[value] = read_value(entries, name);
  }
  return values;
}

// attention_efficiency_by_head_dim (and _by_seq): {32: {fwd: curve, bwd: curve}, 64: ...};
// by_seq efficiencies reach 2 (a causal kernel against the full rectangle's FLOPs)
std::map<int, PassCurves> read_attention_by_head_dim(MappingReader& r, const std::string& key, double max_value) {
  return read_int_keyed<PassCurves>(r, key, 4096, "head widths to {fwd: curve, bwd: curve}", "a head width",
                                    [max_value](MappingReader& entries, const std::string& name) {
                                      return read_pass_curves_up_to(entries, name, max_value);
                                    });
}

// attention_kernel_efficiency_by_seq (key): {KERNEL: {HEAD_DIM: {fwd, bwd}}} for the fused
// attention kernels other than FlashAttention-2 (whose curves are attention_efficiency_by_seq);
// `max_value` 2 for causal curves (against the full rectangle), 1 for non-causal ones
std::map<std::string, std::map<int, PassCurves>, std::less<>> read_attention_kernels(MappingReader& r,
                                                                                     const std::string& key,
                                                                                     double max_value) {
  std::vector<std::string_view> own_curves;
  for (std::string_view k : kAttentionKernels)
    if (k != kFlash2Attention && !picked_by_device(k)) own_curves.push_back(k);  // sdpa, te pick one of them
  return read_named<std::map<int, PassCurves>>(r, key, own_curves, "an attention kernel with curves of its own",
                                               [max_value](MappingReader& kernels, const std::string& name) {
                                                 return read_attention_by_head_dim(kernels, name, max_value);
                                               });
}

// prefill_attention_by_heads (key): {KERNEL: {HEAD_PROMPT_PAIRS: causal curve by prompt length}}
// for the serving engines' own prefill calls (kEnginePrefillKernels); efficiencies up to 2
std::map<std::string, std::map<int, std::vector<EfficiencyPoint>>, std::less<>> read_prefill_by_heads(
    MappingReader& r, const std::string& key) {
  const std::vector<std::string_view> names(kEnginePrefillKernels.begin(), kEnginePrefillKernels.end());
  return read_named<std::map<int, std::vector<EfficiencyPoint>>>(
      r, key, names, "a serving engine's measured prefill kernel", [](MappingReader& kernels, const std::string& name) {
        return read_int_keyed<std::vector<EfficiencyPoint>>(
            kernels, name, 1'000'000, "(query head, prompt) pair counts to curves",
            "a count of (query head, prompt) pairs",
            [](MappingReader& entries, const std::string& pairs) { return read_curve_up_to(entries, pairs, 2.0); });
      });
}

// gemm_efficiency_by_dtype (key): {fp8: curve, tf32: curve, ...}, math types with a peak
std::map<Dtype, std::vector<EfficiencyPoint>> read_gemm_by_dtype(MappingReader& r, const std::string& key,
                                                                 const GpuSpec& g) {
  std::map<Dtype, std::vector<EfficiencyPoint>> curves;
  if (!r.has(key)) return curves;
  const std::string where = r.key_path(key);
  const YAML::Node n = r.child(key);
  if (!n.IsMap()) throw ScenarioError(where, "", "must be a mapping of math types to [[FLOPs, efficiency], ...]");
  MappingReader entries(n, where);
  for (const auto& entry : n) {
    const std::string name = entry.first.as<std::string>();
    Dtype d{};
    if (!parse_dtype(name, d) || !g.has_peak(d))
      throw ScenarioError(join_key(where, name), name, "is not a math type this GPU lists under peak_tflops");
    curves[d] = read_curve(entries, name);
    if (curves[d].empty()) throw ScenarioError(join_key(where, name), "", "needs at least one [FLOPs, efficiency] point");
  }
  return curves;
}

// gemm_kernel_efficiency_by_dtype: {KERNEL: {MATH TYPE: curve}} for the GEMM kernel families
// other than the one the GPU's own curves describe (cuBLAS's)
std::map<std::string, std::map<Dtype, std::vector<EfficiencyPoint>>, std::less<>> read_gemm_kernels(MappingReader& r,
                                                                                                    const GpuSpec& g) {
  std::vector<std::string_view> own_curves;
  for (std::string_view k : kGemmKernels)
    if (k != kCublasGemm) own_curves.push_back(k);
  return read_named<std::map<Dtype, std::vector<EfficiencyPoint>>>(
      r, "gemm_kernel_efficiency_by_dtype", own_curves, "a GEMM kernel family with curves of its own",
      [&g](MappingReader& kernels, const std::string& name) { return read_gemm_by_dtype(kernels, name, g); });
}

// efficiency_by_op: {reduce_scatter: curve, ...}, one curve per collective that has its own
std::map<std::string, std::vector<EfficiencyPoint>, std::less<>> read_efficiency_by_op(MappingReader& r) {
  return read_named<std::vector<EfficiencyPoint>>(
      r, "efficiency_by_op", {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "send_recv"},
      "a collective", read_curve);
}

namespace {

// {2: [[bytes, value], ...], 8: ...} at `where`: curves by group size; `value_name` and
// `max_text` as read_pairs; every value times `scale` (to the stored unit).
std::map<int, std::vector<CurvePoint>> read_curves_by_ranks(const YAML::Node& n, const std::string& where,
                                                            double max_value, const std::string& value_name,
                                                            const std::string& max_text, double scale) {
  std::map<int, std::vector<CurvePoint>> curves;
  if (!n.IsMap())
    throw ScenarioError(where, "", "must be a mapping of group sizes to [[bytes, " + value_name + "], ...]");
  for (const auto& entry : n) {
    const std::string name = entry.first.as<std::string>();
    int ranks = 0;
    const auto [end, error] = std::from_chars(name.data(), name.data() + name.size(), ranks);
    if (error != std::errc() || end != name.data() + name.size() || ranks < 2 || ranks > 1 << 20)
      throw ScenarioError(join_key(where, name), name, "is not a group size (an integer >= 2)");
    auto curve = read_pairs(entry.second, join_key(where, name), max_value, value_name, max_text);
    if (curve.empty())
      throw ScenarioError(join_key(where, name), "", "needs at least one [bytes, " + value_name + "] point");
    for (CurvePoint& p : curve) p.y *= scale;
    curves[ranks] = std::move(curve);
  }
  return curves;
}

}  // namespace

// measured_busbw: {all_reduce: {2: [[bytes, GB/s], ...], 8: ...}, ...}
std::map<std::string, std::map<int, std::vector<CurvePoint>>, std::less<>> read_measured_busbw(MappingReader& r) {
  auto by_ranks = [](MappingReader& ops, const std::string& op) {  // stored in bytes/s
    return read_curves_by_ranks(ops.child(op), ops.key_path(op), 1e6, "busbw GB/s", "1e6", kGB);
  };
  return read_named<std::map<int, std::vector<CurvePoint>>>(
      r, "measured_busbw", {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "send_recv"},
      "a collective", by_ranks);
}

LinkSpec read_link(MappingReader& parent, const std::string& key, const LinkSpec& fallback,
                   int* nics_per_node) {
  if (!parent.has(key)) return fallback;
  MappingReader r(parent.child(key), parent.key_path(key));
  LinkSpec link;
  link.bandwidth_Bps = r.number("bandwidth_GBps", fallback.bandwidth_Bps / kGB, 1e-6, 1e6) * kGB;
  link.latency_s = r.number("latency_us", fallback.latency_s * 1e6, 0, 1e6) * 1e-6;
  if (nics_per_node) *nics_per_node = static_cast<int>(r.integer("nics_per_node", *nics_per_node, 1, 1024));
  link.efficiency = read_curve(r, "efficiency");
  if (link.efficiency.empty()) link.efficiency = fallback.efficiency;
  link.efficiency_by_op = read_efficiency_by_op(r);
  if (link.efficiency_by_op.empty()) link.efficiency_by_op = fallback.efficiency_by_op;
  // only a group inside one node takes a measured curve (sim/cost/collective_cost.cpp): one
  // given across nodes would be silently unused
  if (key != "intra_node" && r.has("measured_busbw"))
    throw ScenarioError(r.key_path("measured_busbw"), "",
                        "is used inside a node only (collectives across nodes take the protocol model); "
                        "give it under intra_node");
  link.measured_busbw = read_measured_busbw(r);
  if (link.measured_busbw.empty()) link.measured_busbw = fallback.measured_busbw;
  r.reject_unknown();
  if (link.bandwidth_Bps <= 0) throw ScenarioError(r.key_path("bandwidth_GBps"), "", "is required");
  return link;
}

// `kv_attention_latency: {call_us, sequence_kv_head_ns}` (hardware/gpu_spec.hpp), either or both.
KvAttentionLatency read_kv_attention_latency(MappingReader& parent) {
  const std::string key = "kv_attention_latency";
  MappingReader r(parent.child(key), parent.key_path(key));
  KvAttentionLatency l;
  l.call_s = r.number("call_us", 0, 0, 1e6) * 1e-6;
  l.item_s = r.number("sequence_kv_head_ns", 0, 0, 1e6) * 1e-9;
  r.reject_unknown();
  return l;
}

// `power_limited_gemm: {memory_bound_load, knee_load, slope}` (hardware/gpu_spec.hpp), all three.
PowerLimitedGemm read_power_limited_gemm(MappingReader& parent) {
  const std::string key = "power_limited_gemm";
  MappingReader r(parent.child(key), parent.key_path(key));
  const auto required = [&](const char* name, double lo, double hi) {
    const auto v = r.optional_number(name, lo, hi);
    if (!v) throw ScenarioError(r.key_path(name), "", "is required");
    return *v;
  };
  PowerLimitedGemm p;
  p.memory_bound_load = required("memory_bound_load", 0, 1);
  p.knee_load = required("knee_load", 0, 1);
  p.slope = required("slope", 0, 1);
  p.measured_at_W = r.number("measured_at_W", 0, 1, 1e5);
  r.reject_unknown();
  // at full load (1) the clock is 1 - slope x (1 - knee_load): it must stay above zero
  if (p.slope * (1 - p.knee_load) >= 1)
    throw ScenarioError(r.key_path("slope"), std::to_string(p.slope),
                        "times (1 - knee_load) must be below 1: the GEMMs' clock at full load would be 0");
  return p;
}

}  // namespace

GpuSpec read_gpu(const YAML::Node& node, const std::string& path) {
  GpuSpec g;
  const YAML::Node full = resolve_preset(node, path, g.name, catalog_gpu_node);
  MappingReader r(full, path);
  r.has("preset");
  if (r.has("memory_GiB") && r.has("memory_GB"))
    throw ScenarioError(path, "", "give memory_GiB or memory_GB, not both");
  if (auto gib = r.optional_number("memory_GiB", 1e-3, 1e7)) g.memory_bytes = static_cast<std::int64_t>(*gib * kGiB);
  if (auto gb = r.optional_number("memory_GB", 1e-3, 1e7)) g.memory_bytes = static_cast<std::int64_t>(*gb * kGB);
  if (g.memory_bytes == 0) throw ScenarioError(r.key_path("memory_GiB"), "", "is required");
  g.hbm_bandwidth_Bps = r.number("hbm_bandwidth_GBps", 0, 1e-3, 1e6) * kGB;
  if (g.hbm_bandwidth_Bps == 0) throw ScenarioError(r.key_path("hbm_bandwidth_GBps"), "", "is required");
  MappingReader peaks(r.child("peak_tflops"), r.key_path("peak_tflops"));
  for (Dtype d : {Dtype::fp32, Dtype::tf32, Dtype::fp16, Dtype::bf16, Dtype::fp8, Dtype::int8, Dtype::int4,
                  Dtype::nvfp4, Dtype::mxfp4})
    if (auto tflops = peaks.optional_number(std::string(to_string(d)), 1e-6, 1e6)) g.peak_flops[d] = *tflops * 1e12;
  peaks.reject_unknown();
  if (!g.has_peak(Dtype::fp32)) throw ScenarioError(peaks.key_path("fp32"), "", "is required");
  g.nvlink_bandwidth_Bps = r.number("nvlink_GBps", 0, 0, 1e6) * kGB;
  g.kernel_launch_s = r.number("kernel_launch_us", 0, 0, 1e6) * 1e-6;
  g.grouped_gemm_expert_floor_s = r.number("grouped_gemm_expert_floor_us", 0, 0, 1e6) * 1e-6;
  g.grouped_gemm_efficiency_by_rows = read_curve(r, "grouped_gemm_efficiency_by_rows");
  g.grouped_gemm_efficiency_by_rows_16bit = read_curve(r, "grouped_gemm_efficiency_by_rows_16bit");
  g.grouped_gemm_efficiency_by_rows_fp8_block = read_curve(r, "grouped_gemm_efficiency_by_rows_fp8_block");
  g.grouped_gemm_scale_by_expert_weights = read_curve_up_to(r, "grouped_gemm_scale_by_expert_weights", 2.0);
  g.grouped_gemm_efficiency_by_rows_small_expert_4bit =
      read_curve(r, "grouped_gemm_efficiency_by_rows_small_expert_4bit");
  if (!g.grouped_gemm_efficiency_by_rows_small_expert_4bit.empty() && g.grouped_gemm_scale_by_expert_weights.empty())
    throw ScenarioError(
        r.key_path("grouped_gemm_efficiency_by_rows_small_expert_4bit"), "",
        "needs grouped_gemm_scale_by_expert_weights (its first point is the expert it was measured at)");
  g.sm80_gemm_scale = r.number("sm80_gemm_scale", 1, 0.05, 1);
  g.sms = static_cast<int>(r.integer("sms", 0, 0, 1 << 20));
  g.memory_efficiency = r.number("memory_efficiency", 1.0, 1e-3, 1.0);
  if (auto mib = r.optional_number("workspace_MiB", 0, 1e6)) g.workspace_bytes = static_cast<std::int64_t>(*mib * 1048576.0);
  g.cache_bytes = static_cast<std::int64_t>(r.number("cache_MiB", 0, 0, 1e6) * 1048576.0);
  g.gemm_reuse_time = read_curve(r, "gemm_reuse_time");
  g.gemm_reuse_time_alone = read_curve(r, "gemm_reuse_time_alone");
  if (!g.gemm_reuse_time_alone.empty() && g.gemm_reuse_time.empty())
    throw ScenarioError(r.key_path("gemm_reuse_time_alone"), "", "needs gemm_reuse_time (the curve of busy machines)");
  if (r.has("gemm_reuse_ranks")) {
    if (g.gemm_reuse_time.empty())
      throw ScenarioError(r.key_path("gemm_reuse_ranks"), "", "needs gemm_reuse_time (the curve it was measured for)");
    g.gemm_reuse_ranks = static_cast<int>(r.required_integer("gemm_reuse_ranks", 1, 4096));
  }
  // a few-row GEMM's time by rows over 4 rows': 16 rows ran 2.2-2.7x on a 2-vCPU EPYC
  g.gemm_rows_time =
      efficiency_points(read_pairs(r.child("gemm_rows_time"), r.key_path("gemm_rows_time"), 16.0, "ratio", "16"));
  g.gemm_efficiency = read_curve(r, "gemm_efficiency");
  g.gemm_dgrad_efficiency = read_curve(r, "gemm_dgrad_efficiency");
  g.gemm_wgrad_efficiency = read_curve(r, "gemm_wgrad_efficiency");
  g.gemm_efficiency_by_dtype = read_gemm_by_dtype(r, "gemm_efficiency_by_dtype", g);
  g.gemm_kernel_efficiency_by_dtype = read_gemm_kernels(r, g);
  g.gemm_misaligned_scale = r.number("gemm_misaligned_scale", 1, 0.05, 1);
  if (r.has("gemm_tile_edges")) {
    g.gemm_tile_edges = r.integer_list("gemm_tile_edges", 128, 1024);
    if (g.gemm_tile_edges.empty()) throw ScenarioError(r.key_path("gemm_tile_edges"), "[]", "needs at least one tile edge");
  }
  if (r.has("power_limited_gemm")) g.power_limited_gemm = read_power_limited_gemm(r);
  g.power_limit_W = r.number("power_limit_W", 0, 1, 1e5);
  if (g.power_limit_W > 0 && !(g.power_limited_gemm && g.power_limited_gemm->measured_at_W > 0))
    throw ScenarioError(r.key_path("power_limit_W"), std::to_string(g.power_limit_W),
                        "needs power_limited_gemm with its measured_at_W: the clock at a limit is "
                        "scaled from a duty-cycle sweep measured at a known limit");
  g.fp8_gemm_tn_only = r.boolean("fp8_gemm_tn_only", false);
  // without a measured curve every GEMM would run at the datasheet peak
  if (g.gemm_efficiency.empty())
    throw ScenarioError(r.key_path("gemm_efficiency"), "",
                        "is required: measured [[GEMM FLOPs, fraction of the dense peak], ...] "
                        "(hardware/catalog/README.md says how to fit one)");
  g.attention_efficiency = read_pass_curves(r, "attention_efficiency");
  g.attention_efficiency_by_head_dim = read_attention_by_head_dim(r, "attention_efficiency_by_head_dim", 1.0);
  g.attention_efficiency_by_seq = read_attention_by_head_dim(r, "attention_efficiency_by_seq", 2.0);
  g.attention_kernel_efficiency_by_seq = read_attention_kernels(r, "attention_kernel_efficiency_by_seq", 2.0);
  g.prefill_attention_by_heads = read_prefill_by_heads(r, "prefill_attention_by_heads");
  g.attention_kernel_noncausal_efficiency_by_seq =
      read_attention_kernels(r, "attention_kernel_noncausal_efficiency_by_seq", 1.0);
  g.kv_attention_efficiency = read_curve(r, "kv_attention_efficiency");
  if (r.has("kv_attention_latency")) g.kv_attention_latency = read_kv_attention_latency(r);
  g.kv_attention_cuda_core_efficiency = r.number("kv_attention_cuda_core_efficiency", 0, 0, 1);
  g.kv_attention_fa2_efficiency = r.number("kv_attention_fa2_efficiency", 0, 0, 1);
  g.kv_attention_fa3_m128_efficiency = r.number("kv_attention_fa3_m128_efficiency", 0, 0, 1);
  g.kernel_efficiency = read_kernel_efficiency(r, "kernel_efficiency");
  g.kernel_efficiency_16bit = read_kernel_efficiency(r, "kernel_efficiency_16bit");
  r.reject_unknown();
  return g;
}

// cuda_graph_scope: a list of Megatron-core's capture scopes (attn, moe_router,
// moe_preprocess), as --cuda-graph-scope takes them; moe_preprocess only with moe_router,
// as Megatron-core requires.
namespace {
CudaGraphScopes read_cuda_graph_scopes(MappingReader& r) {
  CudaGraphScopes scopes;
  const YAML::Node list = r.child("cuda_graph_scope");
  if (!list.IsDefined() || list.IsNull()) return scopes;
  const std::string path = r.key_path("cuda_graph_scope");
  if (!list.IsSequence()) throw ScenarioError(path, "", "must be a list of scopes: attn, moe_router, moe_preprocess");
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string scope = list[i].IsScalar() ? list[i].Scalar() : "";
    if (scope == "attn") scopes.attn = true;
    else if (scope == "moe_router") scopes.moe_router = true;
    else if (scope == "moe_preprocess") scopes.moe_preprocess = true;
    else
      throw ScenarioError(path + "[" + std::to_string(i) + "]", scope,
                          "is not a scope twinsim prices: attn, moe_router, moe_preprocess");
  }
  if (scopes.moe_preprocess && !scopes.moe_router)
    throw ScenarioError(path, "moe_preprocess", "needs moe_router: Megatron-core captures the preprocess only with it");
  return scopes;
}
}  // namespace

// stack: a catalog preset's name, or a mapping (optionally `preset: NAME`).
StackSpec read_stack(const YAML::Node& node, const std::string& path) {
  StackSpec s;
  const YAML::Node full = resolve_preset(node, path, s.name, catalog_stack_node);
  MappingReader r(full, path);
  r.has("preset");
  s.host_op_s = r.number("host_op_us", 0, 0, 1e6) * 1e-6;
  s.host_microbatch_s = r.number("host_microbatch_us", 0, 0, 1e7) * 1e-6;
  s.serving_step_s = r.number("serving_step_us", 0, 0, 1e7) * 1e-6;
  s.serving_sequence_s = r.number("serving_sequence_us", 0, 0, 1e6) * 1e-6;
  s.serving_async = r.boolean("serving_async", false);
  s.serving_request_s = r.number("serving_request_us", 0, 0, 1e7) * 1e-6;
  s.serving_request_token_s = r.number("serving_request_token_us", 0, 0, 1e4) * 1e-6;
  s.serving_keeps_window_kv = r.choice("serving_window_kv", std::string("free"), {"free", "keep"}) == "keep";
  s.serving_decode_shared_kv_group = static_cast<int>(r.integer("serving_decode_shared_kv_group", 0, 0, 1024));
  s.serving_decode_cuda_core_group = static_cast<int>(r.integer("serving_decode_cuda_core_group", 0, 0, 1024));
  s.serving_prefix_attention_fa2 = r.boolean("serving_prefix_attention_fa2", false);
  if (r.has("serving_prefill_attention")) {
    s.serving_prefill_attention =
        r.choice("serving_prefill_attention", "",
                 {std::string(kFlash2Attention), std::string(kCudnnAttention), std::string(kFlash3Attention),
                  std::string(kFlash4Attention), std::string(kVllmFa3Prefill), std::string(kSglangFa3Prefill)});
    // a preset's choice unless the scenario's own stack mapping names the kernel
    s.serving_prefill_attention_from_preset = !(node.IsMap() && node["serving_prefill_attention"].IsDefined());
  }
  s.serving_decode_fa3_m128 = r.boolean("serving_decode_fa3_m128", false);
  s.serving_fp8_input_cast = r.boolean("serving_fp8_input_cast", false);
  s.serving_max_batched_tokens = r.integer("serving_max_batched_tokens", 0, 0, std::int64_t{1} << 24);
  s.serving_max_sequences = r.integer("serving_max_sequences", 0, 0, 1'000'000);
  s.serving_output_reserve = r.number("serving_output_reserve", 0, 0, 1);
  s.serving_prefill_first = r.boolean("serving_prefill_first", false);
  s.serving_chunked_prefill = r.boolean("serving_chunked_prefill", true);
  s.serving_idle_fetch_one = r.boolean("serving_idle_fetch_one", false);
  s.serving_bench_limits = r.boolean("serving_bench_limits", false);
  s.serving_cuda_graph_batch_sizes = r.integer_list("serving_cuda_graph_batch_sizes", 1, 1'000'000);
  // [smallest TP size, SGLang's mem_fraction_static] pairs (StackSpec::serving_mem_fraction_static)
  const std::string fractions = r.key_path("serving_mem_fraction_static");
  for (const CurvePoint& pt : read_pairs(r.child("serving_mem_fraction_static"), fractions, 1.0, "fraction", "1")) {
    if (pt.x != std::floor(pt.x))
      throw ScenarioError(fractions, std::to_string(pt.x),
                          "must list [TP size, fraction] pairs: a TP size is a whole number");
    s.serving_mem_fraction_static.emplace_back(static_cast<int>(pt.x), pt.y);
  }
  s.serving_kv_free_fraction = r.number("serving_kv_free_fraction", 0, 0, 1);
  if (s.serving_kv_free_fraction > 0 && !s.serving_mem_fraction_static.empty())
    throw ScenarioError(r.key_path("serving_kv_free_fraction"), std::to_string(s.serving_kv_free_fraction),
                        "sizes the KV pool TensorRT-LLM's way: not with serving_mem_fraction_static as well");
  s.serving_kv_block_tokens = r.integer("serving_kv_block_tokens", 0, 0, 65536);
  if (r.has("serving_tp_allreduce_us"))  // [[bytes, us], ...] by group size, stored in seconds
    s.serving_tp_allreduce_time = read_curves_by_ranks(r.child("serving_tp_allreduce_us"),
                                                       r.key_path("serving_tp_allreduce_us"), 1e6, "us", "1e6", 1e-6);
  s.gemm_library_scale = r.number("gemm_library_scale", 1, 0.1, 1.5);
  if (r.choice("moe_gemm_generation", std::string("native"), {"native", "sm80"}) == "sm80")
    s.moe_gemm_generation = KernelGeneration::sm80;
  // parameter counts (5e7 reads as DeepSpeed's configs write it)
  s.zero_gather_bucket_params = r.integer("zero_gather_bucket_params", 0, 0, std::int64_t{1} << 50);
  s.zero_reduce_bucket_params = r.integer("zero_reduce_bucket_params", 0, 0, std::int64_t{1} << 50);
  s.zero_bucket_all_reduce = r.boolean("zero_bucket_all_reduce", false);
  s.zero_hybrid_sharding = r.boolean("zero_hybrid_sharding", true);
  s.precision_aware_optimizer = r.boolean("precision_aware_optimizer", true);
  s.fp8_cached_moe_act = r.boolean("fp8_cached_moe_act", true);
  s.zero_gather_calls = static_cast<int>(r.integer("zero_gather_calls", 0, 0, 1 << 20));
  s.zero_gather_blocking = r.boolean("zero_gather_blocking", false);
  s.zero_list_copy_s = r.number("zero_list_copy_us", 0, 0, 1e6) * 1e-6;
  s.zero_gather_list_s = r.number("zero_gather_list_us", 0, 0, 1e6) * 1e-6;
  s.zero_reduce_list_s = r.number("zero_reduce_list_us", 0, 0, 1e6) * 1e-6;
  s.zero_reduce_calls = static_cast<int>(r.integer("zero_reduce_calls", 0, 0, 1 << 20));
  s.zero_persistent_tensors = static_cast<int>(r.integer("zero_persistent_tensors", 0, 0, 1 << 20));
  s.zero_reuse_distance_params = r.integer("zero_reuse_distance_params", 0, 0, std::int64_t{1} << 50);
  s.zero_gather_passes = r.number("zero_gather_passes", 0, 0, 64);
  s.zero_reduce_passes = r.number("zero_reduce_passes", 0, 0, 64);
  s.fsdp_pp_keep_gathered = r.boolean("fsdp_pp_keep_gathered", false);
  s.grad_reduce_fp32 = r.boolean("grad_reduce_fp32", false);
  s.fp8_params = r.boolean("fp8_params", false);
  s.moe_probs_in_activation = r.boolean("moe_probs_in_activation", false);
  s.moe_padding_copies = r.boolean("moe_padding_copies", false);
  s.moe_dispatcher = r.choice("moe_dispatcher", std::string("alltoall"), {"alltoall", "deepep"});
  s.moe_host_calls = r.choice("moe_host_calls", std::string("rows"), {"rows", "megatron_core"});
  s.host_torch_op_s = r.number("host_torch_op_us", 0, 0, 1e5) * 1e-6;
  s.host_gemm_launch_s = r.number("host_gemm_launch_us", 0, 0, 1e5) * 1e-6;
  s.host_collective_s = r.number("host_collective_us", 0, 0, 1e5) * 1e-6;
  if (s.moe_host_census() && (s.host_torch_op_s <= 0 || s.host_gemm_launch_s <= 0 || s.host_collective_s <= 0))
    throw ScenarioError(r.key_path("moe_host_calls"), s.moe_host_calls,
                        "needs host_torch_op_us, host_gemm_launch_us and host_collective_us above 0: "
                        "the census's calls are priced at them");
  s.serving_eager_prefill = r.boolean("serving_eager_prefill", false);
  if (s.serving_eager_prefill && s.host_torch_op_s <= 0)
    throw ScenarioError(r.key_path("serving_eager_prefill"), "true",
                        "needs host_torch_op_us above 0: an eager pass's ops are priced at it");
  s.cuda_graph_scopes = read_cuda_graph_scopes(r);
  if (s.cuda_graph_scopes.any() && s.host_torch_op_s <= 0)
    throw ScenarioError(r.key_path("cuda_graph_scope"), "",
                        "needs host_torch_op_us above 0: a graph's replay is priced at it");
  s.offload_update_s_per_param = r.number("offload_update_ns_per_param", 0, 0, 1e6) * 1e-9;
  s.attention_kernel = r.choice("attention_kernel", std::string(kFlash2Attention),
                                {kAttentionKernels.begin(), kAttentionKernels.end()});
  s.gemm_kernel = r.choice("gemm_kernel", std::string(kCublasGemm), {kGemmKernels.begin(), kGemmKernels.end()});
  s.layer_kernels = r.choice("layer_kernels", std::string(kFusedLayerKernels), {kLayerKernels.begin(), kLayerKernels.end()});
  s.softmax = r.choice("softmax", std::string(kKernelSoftmax), {kSoftmaxRules.begin(), kSoftmaxRules.end()});
  if (s.softmax != kKernelSoftmax && s.host_torch_op_s <= 0)
    throw ScenarioError(r.key_path("softmax"), s.softmax,
                        "needs host_torch_op_us above 0: the fallback's ops are priced at it");
  s.loss_kernel = r.choice("loss_kernel", std::string(kLogitsLoss), {kLossKernels.begin(), kLossKernels.end()});
  s.tp_overlap = r.choice("tp_overlap", std::string(kLayerTpOverlap), {kTpOverlaps.begin(), kTpOverlaps.end()});
  s.sp_layout_copies = r.boolean("sp_layout_copies", false);
  s.sp_gather_saved = r.boolean("sp_gather_saved", false);
  s.tp_float8_all_gather = r.boolean("tp_float8_all_gather", false);
  s.async_tp_entry_grad_unfused = r.boolean("async_tp_entry_grad_unfused", false);
  s.separate_projections = r.boolean("separate_projections", false);
  s.expandable_segments = r.boolean("expandable_segments", false);
  s.fits_on_reserved = r.boolean("fits_on_reserved", false);
  s.fsdp_stream_pools = r.boolean("fsdp_stream_pools", false);
  s.cp_exchange = r.choice("cp_exchange", std::string(kRingCpExchange), {kCpExchanges.begin(), kCpExchanges.end()});
  s.fsdp_copies = r.boolean("fsdp_copies", false);
  s.fsdp_prefetch_after_backward = r.boolean("fsdp_prefetch_after_backward", false);
  s.optimizer_foreach = r.boolean("optimizer_foreach", false);
  r.reject_unknown();
  return s;
}

// `host: {h2d_GBps, d2h_GBps, memory_bandwidth_GBps, memory_GiB, adam_ns_per_param, nvme_read_GBps,
// nvme_write_GBps, nvme_GiB, cpu_time_scale}`: the PCIe link of one GPU (both directions, pinned
// memory), the node's CPU memory and its NVMe drives (optional), shared by its GPUs, and its
// CPU's speed at a serving engine's host work (HostSpec::cpu_time_scale).
HostSpec read_host(MappingReader& parent, const std::string& key, int gpus_per_node) {
  MappingReader r(parent.child(key), parent.key_path(key));
  HostSpec h;
  const auto h2d = r.optional_number("h2d_GBps", 1e-3, 1e6);
  if (!h2d) throw ScenarioError(r.key_path("h2d_GBps"), "", "is required (host to GPU over PCIe)");
  h.h2d_Bps = *h2d * 1e9;
  h.d2h_Bps = r.number("d2h_GBps", *h2d, 1e-3, 1e6) * 1e9;
  const auto bandwidth = r.optional_number("memory_bandwidth_GBps", 1e-3, 1e7);
  const auto capacity = r.optional_number("memory_GiB", 1e-3, 1e9);
  if (!bandwidth) throw ScenarioError(r.key_path("memory_bandwidth_GBps"), "", "is required (the node's CPU DRAM)");
  if (!capacity) throw ScenarioError(r.key_path("memory_GiB"), "", "is required (the node's CPU DRAM)");
  h.memory_bandwidth_Bps = *bandwidth * 1e9 / gpus_per_node;
  h.memory_bytes = static_cast<std::int64_t>(*capacity * 1073741824.0) / gpus_per_node;
  // one GPU's share of the host's CPU Adam, as measured with every GPU's rank updating at once
  h.adam_s_per_param = r.number("adam_ns_per_param", 0, 0, 1e6) * 1e-9;
  // a CPU 10x faster or 100x slower than an x86 server at the same host work is not one we know
  h.cpu_time_scale = r.number("cpu_time_scale", 1, 0.1, 100);
  // the node's NVMe drives, as one striped volume (DeepSpeed's ds_io measures them so)
  if (const auto read = r.optional_number("nvme_read_GBps", 1e-3, 1e6)) {
    h.nvme_read_Bps = *read * 1e9 / gpus_per_node;
    h.nvme_write_Bps = r.number("nvme_write_GBps", *read, 1e-3, 1e6) * 1e9 / gpus_per_node;
    h.nvme_bytes = static_cast<std::int64_t>(r.number("nvme_GiB", 0, 1e-3, 1e9) * 1073741824.0) / gpus_per_node;
  } else {
    for (const char* key : {"nvme_write_GBps", "nvme_GiB"})
      if (r.has(key)) throw ScenarioError(r.key_path(key), "", "needs " + r.key_path("nvme_read_GBps") + " (the drives' read rate)");
  }
  r.reject_unknown();
  return h;
}

// `core_sharing: {busy_ranks, alone_gemm_speedup, alone_memory_speedup}`: a CPU host's
// cores shared by its ranks, as `twinsim calibrate` measures them (hardware/core_sharing.hpp).
CoreSharingSpec read_core_sharing(MappingReader& parent, const std::string& key) {
  MappingReader r(parent.child(key), parent.key_path(key));
  CoreSharingSpec s;
  s.busy_ranks = static_cast<int>(r.required_integer("busy_ranks", 2, 4096));
  // a rank alone runs at least as fast as beside busy ones, and not 100x faster
  s.alone_gemm_speedup = r.number("alone_gemm_speedup", 1, 0.5, 100);
  s.alone_memory_speedup = r.number("alone_memory_speedup", 1, 0.5, 100);
  r.reject_unknown();
  return s;
}

// `fabric: {nodes_per_leaf, oversubscription, rail_optimized, nodes_per_pod,
// pod_oversubscription}` (hardware/cluster_spec.hpp).
FabricSpec read_fabric(MappingReader& parent, const std::string& key) {
  MappingReader r(parent.child(key), parent.key_path(key));
  FabricSpec f;
  f.nodes_per_leaf = static_cast<int>(r.integer("nodes_per_leaf", 0, 1, 1 << 20));
  if (f.nodes_per_leaf == 0) throw ScenarioError(r.key_path("nodes_per_leaf"), "", "is required (nodes under one leaf switch)");
  f.oversubscription = r.number("oversubscription", 1.0, 1.0, 1024);
  f.rail_optimized = r.boolean("rail_optimized", true);
  f.nodes_per_pod = static_cast<int>(r.integer("nodes_per_pod", 0, 1, 1 << 24));
  f.pod_oversubscription = r.number("pod_oversubscription", 1.0, 1.0, 1024);
  if (f.nodes_per_pod > 0 && f.nodes_per_pod % f.nodes_per_leaf != 0)
    throw ScenarioError(r.key_path("nodes_per_pod"), std::to_string(f.nodes_per_pod),
                        "must hold whole leaves: a multiple of nodes_per_leaf=" + std::to_string(f.nodes_per_leaf));
  if (f.nodes_per_pod == 0 && r.has("pod_oversubscription"))
    throw ScenarioError(r.key_path("pod_oversubscription"), std::to_string(f.pod_oversubscription),
                        "needs nodes_per_pod (the nodes under one pod's spines)");
  r.reject_unknown();
  return f;
}

ClusterSpec read_cluster(const YAML::Node& node, const std::string& path) {
  ClusterSpec c;
  const YAML::Node full = resolve_preset(node, path, c.name, catalog_node_type_node);
  MappingReader r(full, path);
  r.has("preset");
  c.gpu = read_gpu(r.child("gpu"), r.key_path("gpu"));
  c.gpus_per_node = static_cast<int>(r.integer("gpus_per_node", 8, 1, 4096));
  c.nodes = static_cast<int>(r.integer("nodes", 0, 1, 1 << 24));
  // without an intra_node section, NVLink comes from the GPU's own figure
  c.intra_node = read_link(r, "intra_node", {c.gpu.nvlink_bandwidth_Bps, 3e-6, {}, {}, {}}, nullptr);
  c.nics_per_node = 1;
  c.inter_node = read_link(r, "inter_node", {0, 0, {}, {}, {}}, &c.nics_per_node);
  c.straggler = r.number("straggler", 0, 0, 10);
  // up to 10%: the slowest of 10^7 GPUs then runs 5.3 deviations, 53%, below the mean
  c.clock_spread = r.number("clock_spread", 0, 0, 0.1);
  if (r.has("straggler") && r.has("clock_spread"))
    throw ScenarioError(r.key_path("clock_spread"), std::to_string(c.clock_spread),
                        "and " + r.key_path("straggler") + " both set the slowest GPU's lag: give one");
  c.nccl_channels = static_cast<int>(r.integer("nccl_channels", 0, 0, 4096));
  if (r.has("host")) c.host = read_host(r, "host", c.gpus_per_node);
  if (r.has("fabric")) c.fabric = read_fabric(r, "fabric");
  if (r.has("core_sharing")) c.core_sharing = read_core_sharing(r, "core_sharing");
  r.reject_unknown();
  if (c.gpu.sms > 0 && c.nccl_channels >= c.gpu.sms)  // without an SM count it is not modelled
    throw ScenarioError(r.key_path("nccl_channels"), std::to_string(c.nccl_channels),
                        "must be below the GPU's " + std::to_string(c.gpu.sms) +
                            " SMs (cluster.gpu.sms; an NCCL channel holds one SM)");
  if (c.intra_node.bandwidth_Bps <= 0)
    throw ScenarioError(r.key_path("intra_node.bandwidth_GBps"), "", "is required (the GPU gives no nvlink_GBps)");
  if (c.inter_node.bandwidth_Bps <= 0 && c.nodes > 1)
    throw ScenarioError(r.key_path("inter_node"), "", "is required when nodes > 1");
  return c;
}

}  // namespace twinsim
