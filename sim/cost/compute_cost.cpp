#include "sim/cost/compute_cost.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>

#include "hardware/curve.hpp"
#include "hardware/stack_spec.hpp"
#include "models/dtype.hpp"
#include "models/layer_ops.hpp"

namespace twinsim {

namespace {

// cuBLAS's usual output tile on A100/H100 (NVIDIA, "Matrix Multiplication Background
// User's Guide", §2.3 "Typical Tile Dimensions in cuBLAS and Performance").
constexpr std::int64_t kTile = 128;
// Skinny GEMMs get narrower tiles, down to the 16 rows of one tensor-core MMA
// (PTX ISA, mma.m16n8k16), so one decode token does not pay for 128 rows.
constexpr std::int64_t kMinTile = 16;
// Smallest k slice worth a split-K partition (CUTLASS, media/docs/efficient_gemm.md,
// "Parallelized Reductions: Split K"); below it the partial sums cost more than they save.
constexpr std::int64_t kMinSplitK = 256;

// FlashInfer's CUDA-core batch decode runs groups 3, 4 and 8 in one 128-thread CTA shape
// (include/flashinfer/attention/decode.cuh at v0.2.3, lines 728-731), so a cached token costs
// it a fixed share besides its query heads' math: 6.0 heads' worth, from the A100's time a
// byte at 4 query heads per KV head (flashinfer#703: 1.199 TB/s) against 8 (the blog's Figure 9
// slope: 0.857 TB/s), (4 + h) / (8 + h) = 0.714 (scripts/decode_cuda_core_to_catalog.py --gqa4;
// scenarios/validation/microbench/decode_attention_flashinfer_gqa4_issue703.csv).
constexpr double kFlashInferCudaCoreTokenHeads = 6.0;

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// Tile edge for a matrix dimension: the power of two covering it, within [16, 128].
std::int64_t tile_edge(std::int64_t dim) {
  std::int64_t edge = kMinTile;
  while (edge < dim && edge < kTile) edge *= 2;
  return edge;
}

// The fraction of the SMs' slots doing useful work with tm x tn output tiles.
double wave_utilization_of(int sms, std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t tm, std::int64_t tn) {
  const std::int64_t tiles = ceil_div(m, tm) * ceil_div(n, tn);
  // Too few tiles to fill the GPU: cuBLAS splits k so idle SMs take a share.
  std::int64_t split = 1;
  if (tiles < sms) split = std::clamp<std::int64_t>(sms / tiles, 1, std::max<std::int64_t>(1, k / kMinSplitK));
  const std::int64_t blocks = tiles * split;
  const std::int64_t slots = ceil_div(blocks, sms) * sms;  // every wave occupies all SMs
  // Tile quantization: a partial edge tile costs a whole one (ibid. §3.1).
  const double useful_blocks = static_cast<double>(m) * n / (tm * tn) * split;
  return useful_blocks / slots;
}

double memory_s(const GpuSpec& gpu, double bytes) {
  return bytes / (gpu.hbm_bandwidth_Bps * gpu.memory_efficiency);
}

double kernel_memory_s(const GpuSpec& gpu, const ComputeOp& op) {
  return op.bytes / (gpu.hbm_bandwidth_Bps * gpu.kernel_memory_efficiency(op.kernel, op.backward, op.bytes, op.dtype));
}

// The sequence-keyed curves of op's attention kernel (validation made sure the GPU has
// them), for the listed head width nearest op's (ties: the wider).
const PassCurves* attention_by_seq(const GpuSpec& gpu, const ComputeOp& op) {
  const std::map<int, PassCurves>* by_head_dim = &gpu.attention_efficiency_by_seq;
  if (op.noncausal || (!op.attention_kernel.empty() && op.attention_kernel != kFlash2Attention)) {
    const auto& kernels =
        op.noncausal ? gpu.attention_kernel_noncausal_efficiency_by_seq : gpu.attention_kernel_efficiency_by_seq;
    const auto it = kernels.find(op.attention_kernel);
    if (it == kernels.end()) return nullptr;
    by_head_dim = &it->second;
  }
  if (op.kv_len <= 0 || by_head_dim->empty()) return nullptr;
  const PassCurves* best = nullptr;
  std::int64_t best_gap = 0;
  for (const auto& [head_dim, curves] : *by_head_dim) {
    const std::int64_t gap = std::abs(head_dim - op.head_dim);
    if (best == nullptr || gap <= best_gap) best = &curves, best_gap = gap;
  }
  return best;
}

// Measured curves first (by head width, then for every width), then the GEMM curve: a GPU
// without attention figures runs its fused attention as well as its GEMMs.
// The GPU's attention figures keyed by FLOPs for the op; null when it has none at all.
const std::vector<EfficiencyPoint>* attention_curve(const GpuSpec& gpu, const ComputeOp& op) {
  if (is_kv_cache_attention(op.kernel) && !gpu.kv_attention_efficiency.empty()) return &gpu.kv_attention_efficiency;
  if (const auto it = gpu.attention_efficiency_by_head_dim.find(static_cast<int>(op.head_dim));
      it != gpu.attention_efficiency_by_head_dim.end())
    return &it->second.of(op.backward);
  if (!gpu.attention_efficiency.empty()) return &gpu.attention_efficiency.of(op.backward);
  return nullptr;
}

// An engine's own measured prefill call (GpuSpec::prefill_attention_by_heads) over a pass's
// prompt chunks: each measured pair count's rate at the chunk length, then between the pair
// counts at this call's heads x prompts (both log-x, the ends held: outside the measured pairs
// the nearest's rate); 0 where the GPU does not measure the kernel at this head width.
double engine_prefill_rate(const GpuSpec& gpu, const ComputeOp& op) {
  constexpr std::int64_t kMeasuredHeadDim = 128;  // aiconfigurator's context_attention rows
  const auto it = gpu.prefill_attention_by_heads.find(op.attention_kernel);
  if (it == gpu.prefill_attention_by_heads.end() || op.head_dim != kMeasuredHeadDim || op.heads <= 0) return 0;
  const double len = static_cast<double>(op.square_len);
  // square_flops = 4 x prompts x len^2 x heads x head_dim (QK^T and PV over the whole square)
  const double prompts =
      std::max(1.0, std::round(op.square_flops / (4.0 * len * len * static_cast<double>(op.heads * op.head_dim))));
  std::vector<EfficiencyPoint> by_pairs;
  for (const auto& [pairs, curve] : it->second)
    by_pairs.push_back({static_cast<double>(pairs), interpolate_efficiency(curve, len)});
  return interpolate_efficiency(by_pairs, static_cast<double>(op.heads) * prompts);
}

// A serving pass's prompt chunks over their own keys on the engine's causal prefill kernel
// (StackSpec::serving_prefill_attention): those FLOPs, counted as the whole square, at that
// kernel's causal curve for the chunk length (measured against the same whole-square count, so
// the masked half it skips is in the rate) instead of at `efficiency`; 0 where none applies.
double causal_square_s(const GpuSpec& gpu, const ComputeOp& op, double efficiency) {
  if (op.square_flops <= 0 || op.square_len <= 0 || op.attention_kernel.empty() || op.backward) return 0;
  double rate = engine_prefill_rate(gpu, op);
  if (rate <= 0) {
    ComputeOp square = op;
    square.kv_len = op.square_len;
    const PassCurves* by_seq = attention_by_seq(gpu, square);
    if (by_seq == nullptr) return 0;
    rate = interpolate_efficiency(by_seq->of(false), static_cast<double>(op.square_len));
  }
  rate *= op.clock_scale;
  const double peak = gpu.peak(op.dtype);
  return op.square_flops / (peak * rate) - op.square_flops / (peak * efficiency);
}

}  // namespace

const std::vector<EfficiencyPoint>& gemm_curve(const GpuSpec& gpu, GemmPass pass, Dtype dtype,
                                               std::string_view kernel) {
  if (!kernel.empty() && kernel != kCublasGemm)
    if (const auto family = gpu.gemm_kernel_efficiency_by_dtype.find(kernel);
        family != gpu.gemm_kernel_efficiency_by_dtype.end())
      if (const auto it = family->second.find(dtype); it != family->second.end()) return it->second;
  if (const auto it = gpu.gemm_efficiency_by_dtype.find(dtype); it != gpu.gemm_efficiency_by_dtype.end())
    return it->second;
  if (pass == GemmPass::dgrad && !gpu.gemm_dgrad_efficiency.empty()) return gpu.gemm_dgrad_efficiency;
  if (pass == GemmPass::wgrad && !gpu.gemm_wgrad_efficiency.empty()) return gpu.gemm_wgrad_efficiency;
  return gpu.gemm_efficiency;
}

double gemm_wave_utilization(int sms, std::int64_t m, std::int64_t n, std::int64_t k,
                             const std::vector<std::int64_t>& tile_edges) {
  if (sms <= 0 || m <= 0 || n <= 0) return 1.0;
  if (m < kTile || n < kTile) return wave_utilization_of(sms, m, n, k, tile_edge(m), tile_edge(n));
  // Both edges at least a tile: the library picks, among its tiles, the one that fills the
  // GPU best (GpuSpec::gemm_tile_edges; the catalog's Hopper entries list cuBLAS's).
  double best = 0;
  for (const std::int64_t tm : tile_edges)
    for (const std::int64_t tn : tile_edges) best = std::max(best, wave_utilization_of(sms, m, n, k, tm, tn));
  return best;
}

bool gemm_misaligned(std::int64_t m, std::int64_t n, std::int64_t k, GemmPass pass, Dtype dtype) {
  if (dtype == Dtype::fp32 || dtype == Dtype::int4) return false;  // CUDA cores; int4 runs as fp16 math
  // 16 bytes of the math type (NVIDIA, "Matrix Multiplication Background User's Guide",
  // §"Tensor Core Requirements": multiples of 8 for FP16, 16 for INT8, 4 for TF32)
  const std::int64_t values = std::max<std::int64_t>(1, 128 / dtype_bits(dtype));
  const std::int64_t a = pass == GemmPass::wgrad ? m : k, b = n;
  return (a > 0 && a % values != 0) || (b > 0 && b % values != 0);
}

double gemm_shape_factor(const GpuSpec& gpu, std::int64_t m, std::int64_t n, std::int64_t k, GemmPass pass,
                         Dtype dtype) {
  const double alignment = gemm_misaligned(m, n, k, pass, dtype) ? gpu.gemm_misaligned_scale : 1.0;
  return gemm_wave_utilization(gpu.sms, m, n, k, gpu.gemm_tile_edges) * alignment;
}

double gemm_efficiency(const GpuSpec& gpu, double flops, std::int64_t m, std::int64_t n, std::int64_t k, GemmPass pass,
                       Dtype dtype, std::string_view kernel) {
  return interpolate_efficiency(gemm_curve(gpu, pass, dtype, kernel), flops) *
         gemm_shape_factor(gpu, m, n, k, pass, dtype);
}

namespace {
// A curve's value at x > 0, log value linear in log x between its points, the ends held.
double log_log_at(const std::vector<EfficiencyPoint>& curve, double x) {
  if (x <= curve.front().size) return curve.front().efficiency;
  if (x >= curve.back().size) return curve.back().efficiency;
  std::size_t i = 1;
  while (x > curve[i].size) ++i;
  const EfficiencyPoint& a = curve[i - 1];
  const EfficiencyPoint& b = curve[i];
  const double t = std::log(x / a.size) / std::log(b.size / a.size);
  return std::exp(std::log(a.efficiency) + t * std::log(b.efficiency / a.efficiency));
}
}  // namespace

double gemm_reuse_factor(const GpuSpec& gpu, double working_set_bytes) {
  if (gpu.gemm_reuse_time.empty() || working_set_bytes <= 0) return 1.0;
  // the cache's share a rank has now against at the measurement (gemm_reuse_set_scale)
  return log_log_at(gpu.gemm_reuse_time, working_set_bytes * gpu.gemm_reuse_set_scale);
}

double gemm_rows_factor(const GpuSpec& gpu, double rows) {
  // beyond the rows measured (a prefill's hundreds) the roofline's math side prices the rows
  if (gpu.gemm_rows_time.empty() || rows <= 0 || rows > gpu.gemm_rows_time.back().size) return 1.0;
  return log_log_at(gpu.gemm_rows_time, rows);
}

// The memory side of the GEMM roofline: its "gemm" curve (operands out of cache; else
// memory_efficiency) times the reuse curve at the pass's working set and the rows curve at
// its rows a call. A file written before
// the reuse curve was measured: its "gemm_cached" curve when the set fits cache_bytes.
double gemm_memory_s(const GpuSpec& gpu, const ComputeOp& op) {
  auto at = [&](std::string_view kernel) {
    return op.bytes / (gpu.hbm_bandwidth_Bps * gpu.kernel_memory_efficiency(kernel, false, op.bytes));
  };
  // a serving pass's (a working set): also its rows a call against the reuse GEMM's 4
  if (!gpu.gemm_reuse_time.empty()) {
    const double rows = op.working_set_bytes > 0 ? gemm_rows_factor(gpu, static_cast<double>(op.m)) : 1.0;
    return at(kGemmKernel) * gemm_reuse_factor(gpu, op.working_set_bytes) * rows;
  }
  const bool cached = op.working_set_bytes > 0 && op.working_set_bytes <= static_cast<double>(gpu.cache_bytes) &&
                      gpu.kernel_efficiency.contains(kGemmCachedKernel);
  return at(cached ? kGemmCachedKernel : kGemmKernel);
}

double grouped_gemm_shape_scale(const GpuSpec& gpu, std::int64_t n, std::int64_t k) {
  if (n <= 0 || k <= 0) return 1.0;  // shape unknown: the rows curve's own shapes
  // the expert's weight elements N x K on the GPU's measured scale (log-linear, ends held)
  return interpolate_efficiency(gpu.grouped_gemm_scale_by_expert_weights,
                                static_cast<double>(n) * static_cast<double>(k));
}

namespace {

// The rows curve a fused grouped call reads: a 16-bit call of the GPU's own generation's kernel
// its 16-bit curve, a block-scaled fp8 call its fp8_block curve, where the GPU has them; else
// the 8-bit one (DeepGEMM's measured rates).
const std::vector<EfficiencyPoint>& fused_grouped_curve(const GpuSpec& gpu, const ComputeOp& op) {
  const bool native = op.generation == KernelGeneration::native;
  if (dtype_bits(op.dtype) == 16 && native && !gpu.grouped_gemm_efficiency_by_rows_16bit.empty())
    return gpu.grouped_gemm_efficiency_by_rows_16bit;
  if (op.block_scaled && op.dtype == Dtype::fp8 && native && !gpu.grouped_gemm_efficiency_by_rows_fp8_block.empty())
    return gpu.grouped_gemm_efficiency_by_rows_fp8_block;
  return gpu.grouped_gemm_efficiency_by_rows;
}

// The rows curve's rate times the expert's shape factor. A 4-bit call where the GPU has a rows
// curve measured at the shape factor's first expert: that expert's factor becomes the measured
// rate over the rows curve's at these rows (log-linear in elements to the next point, as before).
// Only the first segment changes: it is priced on its two points, the rest on the shape curve.
double fused_grouped_rate(const GpuSpec& gpu, const ComputeOp& op, const std::vector<EfficiencyPoint>& curve,
                          double rows) {
  const double rate = interpolate_efficiency(curve, rows);
  const std::vector<EfficiencyPoint>& small = gpu.grouped_gemm_efficiency_by_rows_small_expert_4bit;
  if (small.empty() || dtype_bits(op.dtype) != 4 || op.generation != KernelGeneration::native || op.n <= 0 || op.k <= 0)
    return rate * grouped_gemm_shape_scale(gpu, op.n, op.k);
  const std::vector<EfficiencyPoint>& scale = gpu.grouped_gemm_scale_by_expert_weights;
  const double elements = static_cast<double>(op.n) * static_cast<double>(op.k);
  if (scale.size() > 1 && elements > scale[1].size) return rate * interpolate_efficiency(scale, elements);
  // the measured rate's factor at the first point, log-linear to the second (held alone)
  const EfficiencyPoint first{scale.front().size, interpolate_efficiency(small, rows) / rate};
  const std::array<EfficiencyPoint, 2> segment{first, scale.size() > 1 ? scale[1] : first};
  return rate *
         interpolate_log_x<EfficiencyPoint, &EfficiencyPoint::size, &EfficiencyPoint::efficiency>(segment, elements);
}

// A fused grouped call (ComputeOp::fused_groups): each group's GEMM at the rate measured for
// its rows, times the factor for its expert's shape. Below the curve's first point the
// weights' streaming sets the time, so only a math-bound call there counts as priced beyond
// the measurements.
ComputeCost fused_grouped_gemm_cost(const GpuSpec& gpu, const ComputeOp& op) {
  const std::vector<EfficiencyPoint>& curve = fused_grouped_curve(gpu, op);
  const auto rows = static_cast<double>(op.m);
  ComputeCost c;
  c.efficiency = fused_grouped_rate(gpu, op, curve, rows) * op.library_scale * op.clock_scale;
  c.math_s = op.flops / (gpu.peak(op.dtype) * c.efficiency);
  c.memory_s = gemm_memory_s(gpu, op);
  c.extrapolated = beyond_measured(curve, rows) && (rows > curve.back().size || c.math_s > c.memory_s);
  c.launch_s = gpu.kernel_launch_s;
  return c;
}

}  // namespace

ComputeCost gemm_cost(const GpuSpec& gpu, const ComputeOp& op) {
  if (op.fused_groups && op.groups > 1) {
    if (!gpu.grouped_gemm_efficiency_by_rows.empty()) return fused_grouped_gemm_cost(gpu, op);
    ComputeOp tall = op;  // not measured: one tall GEMM of every group's rows
    tall.m = op.m * op.groups;
    tall.groups = 1;
    tall.fused_groups = false;
    ComputeCost c = gemm_cost(gpu, tall);
    c.memory_s = gemm_memory_s(gpu, op);  // the same bytes, read by calls of each group's rows
    return c;
  }
  ComputeCost c;
  const double product_flops = op.flops / static_cast<double>(std::max<std::int64_t>(1, op.groups));  // one expert's
  c.efficiency = gemm_efficiency(gpu, product_flops, op.m, op.n, op.k, op.pass, op.dtype, op.gemm_kernel) *
                 op.library_scale * op.clock_scale;
  c.extrapolated = beyond_measured(gemm_curve(gpu, op.pass, op.dtype, op.gemm_kernel), product_flops);
  c.math_s = op.flops / (gpu.peak(op.dtype) * c.efficiency);
  // a grouped call's experts each take at least the GPU's measured floor (hardware/gpu_spec.hpp)
  if (op.groups > 1) c.math_s = std::max(c.math_s, static_cast<double>(op.groups) * gpu.grouped_gemm_expert_floor_s);
  c.memory_s = gemm_memory_s(gpu, op);
  c.launch_s = gpu.kernel_launch_s;
  return c;
}

ComputeCost attention_cost(const GpuSpec& gpu, const ComputeOp& op) {
  ComputeCost c;
  if (const PassCurves* by_seq = attention_by_seq(gpu, op)) {  // keyed by the sequence
    const std::vector<EfficiencyPoint>& curve = by_seq->of(op.backward);
    c.efficiency = interpolate_efficiency(curve, static_cast<double>(op.kv_len));
    c.extrapolated = beyond_measured(curve, static_cast<double>(op.kv_len));
  } else {
    // a GPU with no attention figures at all (the B200 under FlashAttention-2) prices it by
    // its GEMM curve: an assumption, which the report lists with the extrapolated ops
    const std::vector<EfficiencyPoint>* figures = attention_curve(gpu, op);
    const std::vector<EfficiencyPoint>& curve = figures ? *figures : gemm_curve(gpu, GemmPass::fwd, op.dtype);
    c.efficiency = interpolate_efficiency(curve, op.flops);
    c.extrapolated = !figures || beyond_measured(curve, op.flops);
  }
  c.efficiency *= op.clock_scale;  // the power limit's, where it slows attention below its curves'
  c.math_s = op.flops / (gpu.peak(op.dtype) * c.efficiency);
  // the prompt chunks' queries over their cached prefix on an FA2-class kernel of their own
  // (GpuSpec::kv_attention_fa2_efficiency): that share of the FLOPs at its rate instead
  const double fa2_efficiency = gpu.kv_attention_fa2_efficiency * op.clock_scale;
  if (op.prefix_flops > 0 && fa2_efficiency > 0)
    c.math_s +=
        op.prefix_flops / (gpu.peak(op.dtype) * fa2_efficiency) - op.prefix_flops / (gpu.peak(op.dtype) * c.efficiency);
  c.math_s += causal_square_s(gpu, op, c.efficiency);
  // a decode step reads the whole KV cache for a few FLOPs per byte: a device that
  // measured that rate gives it as kernel_efficiency "kv_cache_attention" (or MLA's own)
  const bool kv_cache = is_kv_cache_attention(op.kernel);
  const bool kv_rate = kv_cache && gpu.kernel_efficiency.contains(op.kernel);
  c.memory_s = kv_rate ? kernel_memory_s(gpu, op) : memory_s(gpu, op.bytes);
  // an engine whose decode kernel reads the cache at a rate of its own (FlashAttention-3's paged
  // decode, scenarios/validation/microbench/decode_attention_fa3_paged_published.csv)
  if (kv_cache && op.kv_read_efficiency > 0) c.memory_s = op.bytes / (gpu.hbm_bandwidth_Bps * op.kv_read_efficiency);
  c.launch_s = gpu.kernel_launch_s;
  // its math on the CUDA cores instead (GpuSpec::kv_attention_cuda_core_efficiency): bound by
  // the fp32 rate, each cached token costing its query heads' math plus a fixed
  // kFlashInferCudaCoreTokenHeads heads' worth (a 16-bit K,V byte per FLOP of one query head)
  const double cuda_core_efficiency = gpu.kv_attention_cuda_core_efficiency;
  if (kv_cache && op.cuda_cores && cuda_core_efficiency > 0) {
    const double work = op.flops + kFlashInferCudaCoreTokenHeads * op.bytes;
    c.math_s = std::max(c.math_s, work / (gpu.peak(Dtype::fp32) * cuda_core_efficiency));
  }
  if (kv_cache) {  // and its floors (hardware/gpu_spec.hpp KvAttentionLatency)
    c.memory_s = std::max(c.memory_s, static_cast<double>(op.kv_items) * gpu.kv_attention_latency.item_s);
    c.launch_s += gpu.kv_attention_latency.call_s;
  }
  return c;
}

ComputeCost memory_bound_cost(const GpuSpec& gpu, const ComputeOp& op) {
  ComputeCost c;
  // Element-wise math runs on the CUDA cores (fp32 rate), not the Tensor Cores.
  c.math_s = op.flops / gpu.peak(Dtype::fp32);
  c.memory_s = kernel_memory_s(gpu, op);
  c.launch_s = gpu.kernel_launch_s;
  return c;
}

ComputeCost op_cost(const GpuSpec& gpu, const ComputeOp& op) {
  switch (op.kind) {
    case ComputeKind::gemm: return gemm_cost(gpu, op);
    case ComputeKind::attention: return attention_cost(gpu, op);
    case ComputeKind::elementwise:
    case ComputeKind::norm:
    case ComputeKind::optimizer: return memory_bound_cost(gpu, op);
  }
  return memory_bound_cost(gpu, op);
}

ComputeOp gemm_op(Dtype dtype, std::int64_t m, std::int64_t n, std::int64_t k) {
  ComputeOp op;
  op.kind = ComputeKind::gemm;
  op.dtype = dtype;
  op.m = m;
  op.n = n;
  op.k = k;
  op.flops = 2.0 * m * n * k;  // one multiply and one add per (i, j, l)
  op.bytes = static_cast<double>(dtype_bytes(dtype, m * k) + dtype_bytes(dtype, k * n) + dtype_bytes(dtype, m * n));
  return op;
}

}  // namespace twinsim
