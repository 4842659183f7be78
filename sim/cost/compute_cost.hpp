#pragma once
// Time of one compute op on one GPU: a roofline (Williams, Waterman, Patterson 2009) of
// math against HBM traffic, each derated to what real kernels reach, plus one launch.
#include <cstdint>
#include <string_view>
#include <vector>

#include "hardware/gpu_spec.hpp"
#include "models/dtype.hpp"

namespace twinsim {

enum class ComputeKind { gemm, attention, elementwise, norm, optimizer };

struct ComputeOp {
  ComputeKind kind = ComputeKind::gemm;
  // math type: selects the peak of gemm and attention; memory-bound kernels: the type of
  // their data (16-bit: the device's kernel_efficiency_16bit where it has one)
  Dtype dtype = Dtype::bf16;
  double flops = 0;
  double bytes = 0;               // HBM traffic, reads plus writes
  std::int64_t m = 0, n = 0, k = 0;  // gemm: output m x n, inner k (0 = shape unknown)
  // gemm: how many equal m x n x k products one call runs (a MoE layer's local experts, `flops`
  // their sum). Transformer Engine's GroupedLinear on Hopper issues one cuBLAS GEMM per expert
  // (general_grouped_gemm, multi-stream cuBLAS), so each takes its own size's point on the curve.
  std::int64_t groups = 1;
  // gemm: the groups run as one fused kernel (a serving engine's fused MoE: vLLM's and SGLang's
  // fused_moe, TensorRT-LLM's MoE GEMM), m each group's rows: priced at the GPU's
  // grouped_gemm_efficiency_by_rows, no per-expert launch floor; false: one GEMM per group.
  bool fused_groups = false;
  bool backward = false;          // attention: the backward kernels run slower
  GemmPass pass = GemmPass::fwd;  // gemm: which of a linear layer's three products
  double library_scale = 1;       // gemm: the stack's GEMM library against the GPU's curve
  // gemm: the generation a fused grouped call's kernel was built for (StackSpec::moe_gemm_generation)
  KernelGeneration generation = KernelGeneration::native;
  // gemm: an fp8 fused grouped call whose weights carry 128 x 128 block scales (a DeepSeek-V3-style
  // checkpoint): priced at GpuSpec::grouped_gemm_efficiency_by_rows_fp8_block where the GPU has it
  bool block_scaled = false;
  double clock_scale = 1;         // gemm: the clock sustained under the power limit against the curve's (sim/cost/power_limit.hpp)
  std::int64_t head_dim = 0;      // attention: the head width (0: unknown)
  std::int64_t kv_len = 0;        // flash attention: keys per query (0: unknown; by FLOPs)
  std::int64_t kv_items = 0;      // attention over a KV cache: (sequence, KV head) pairs
  bool cuda_cores = false;  // that attention's math on the CUDA cores (GpuSpec::kv_attention_cuda_core_efficiency)
  double prefix_flops = 0;  // of flops, those at GpuSpec::kv_attention_fa2_efficiency instead
  // serving attention: of flops, a prompt chunk's causal square (counted whole), priced on
  // attention_kernel's causal curve at square_len keys instead (StackSpec::serving_prefill_attention)
  double square_flops = 0;
  std::int64_t square_len = 0;
  std::int64_t heads = 0;  // serving attention: this GPU's query heads (GpuSpec::prefill_attention_by_heads)
  // gemm: which kernel family runs it ("" or "cublas": the GPU's curves; else its
  // gemm_kernel_efficiency_by_dtype entry for the math type, where it has one)
  std::string_view gemm_kernel;
  // attention over a KV cache: the fraction of HBM bandwidth the engine's own decode kernel
  // reads it at (GpuSpec::kv_attention_fa3_m128_efficiency); 0: the GPU's kv_cache_attention figure
  double kv_read_efficiency = 0;
  // flash attention: which fused kernel runs it ("" or "flash2": the GPU's
  // attention_efficiency_by_seq; else its attention_kernel_efficiency_by_seq entry)
  std::string_view attention_kernel;
  // flash attention called without the causal mask: that kernel's
  // attention_kernel_noncausal_efficiency_by_seq entry (the caller checks that the GPU has one)
  bool noncausal = false;
  // memory-bound kernels: which one ("gelu", "layernorm", ...; see LayerOp::kernel),
  // for GPUs that list per-kernel efficiencies; "" runs at the GPU's memory_efficiency.
  // GEMMs: "gemm" (their memory side: working_set_bytes says how much of it the cache keeps).
  std::string_view kernel;
  // gemm: the bytes one GPU's pass re-uses step after step (a serving pass's weights, KV
  // cache and activations), which the device's reuse curve prices (gemm_reuse_factor); 0:
  // unknown, operands out of cache.
  double working_set_bytes = 0;
};

// The parts of an op's time, so a report can say why it took that long.
struct ComputeCost {
  double math_s = 0;        // FLOPs at the achievable rate
  double memory_s = 0;      // bytes at the achievable HBM rate
  double launch_s = 0;
  double efficiency = 1;    // achieved fraction of the dense peak on the math side
  bool extrapolated = false;  // the op's size lay outside the GPU's measured curve
  double time_s() const { return (math_s > memory_s ? math_s : memory_s) + launch_s; }
  bool memory_bound() const { return memory_s > math_s; }
};

// A fused grouped GEMM's rate at an expert of n x k weights against the rate its GPU's
// grouped_gemm_efficiency_by_rows gives (GpuSpec::grouped_gemm_scale_by_expert_weights); 1 where
// the GPU has no such figures or the shape is unknown.
double grouped_gemm_shape_scale(const GpuSpec& gpu, std::int64_t n, std::int64_t k);

// Fraction of the SMs doing useful work for an m x n x k GEMM: tile quantization and wave
// quantization of output tiles (the best pair of `tile_edges` where both m and n reach 128,
// else 128, narrower for skinny shapes), with split-K when there are fewer tiles than SMs.
double gemm_wave_utilization(int sms, std::int64_t m, std::int64_t n, std::int64_t k,
                             const std::vector<std::int64_t>& tile_edges);

// Whether a GEMM's weight (forward and dgrad: n and k; wgrad: its output m x n) has a
// dimension that is not a whole number of 16 bytes of the tensor-core math type `dtype`
// (cuBLAS's leading dimensions in PyTorch's row-major layout; the tokens never are one).
// fp32 math (CUDA cores) and unknown shapes (zeros) are never misaligned.
bool gemm_misaligned(std::int64_t m, std::int64_t n, std::int64_t k, GemmPass pass, Dtype dtype);

// What a GEMM's shape takes from its curve's rate: the wave utilisation, times the GPU's
// gemm_misaligned_scale where the shape is misaligned (one home for the engine's pricing
// and the curve fit, sim/validate/gemm_fit).
double gemm_shape_factor(const GpuSpec& gpu, std::int64_t m, std::int64_t n, std::int64_t k, GemmPass pass,
                         Dtype dtype);

// The curve a GEMM reads: the kernel family's own for its math type where the GPU lists one
// (GpuSpec::gemm_kernel_efficiency_by_dtype), else the math type's, else the pass's, else the
// GPU's gemm_efficiency (every catalog GPU has one; scenario/read_hardware.cpp requires it).
const std::vector<EfficiencyPoint>& gemm_curve(const GpuSpec& gpu, GemmPass pass, Dtype dtype,
                                               std::string_view kernel = {});

// A few-row GEMM's time when its pass re-uses `working_set_bytes` of operands step after
// step, as a fraction of its time with them out of cache: the device's measured reuse curve
// (GpuSpec::gemm_reuse_time), log time linear in log bytes between its points, the first
// point's value below them and the last's above; 1 for an unknown set (0) or no curve.
double gemm_reuse_factor(const GpuSpec& gpu, double working_set_bytes);
// A serving GEMM's time at `rows` a call (per group) over the reuse curve's 4-row time
// (GpuSpec::gemm_rows_time), log time linear in log rows between its points, the first held
// below it; 1 beyond its last point (a prefill's rows: the math side prices them) or without it.
double gemm_rows_factor(const GpuSpec& gpu, double rows);

// Achieved fraction of dense peak for a GEMM of this shape (`flops` picks the point on
// the GPU's efficiency curve for that pass, math type and kernel family; m, n, k the
// quantization; zeros mean unknown).
double gemm_efficiency(const GpuSpec& gpu, double flops, std::int64_t m, std::int64_t n, std::int64_t k,
                       GemmPass pass = GemmPass::fwd, Dtype dtype = Dtype::bf16, std::string_view kernel = {});

// One function per kind; op_cost dispatches on op.kind.
ComputeCost gemm_cost(const GpuSpec& gpu, const ComputeOp& op);
ComputeCost attention_cost(const GpuSpec& gpu, const ComputeOp& op);
ComputeCost memory_bound_cost(const GpuSpec& gpu, const ComputeOp& op);  // elementwise, norm, optimizer
ComputeCost op_cost(const GpuSpec& gpu, const ComputeOp& op);

inline double op_time_s(const GpuSpec& gpu, const ComputeOp& op) { return op_cost(gpu, op).time_s(); }

// A plain GEMM C[m,n] = A[m,k] B[k,n] in one dtype (each matrix read or written once).
ComputeOp gemm_op(Dtype dtype, std::int64_t m, std::int64_t n, std::int64_t k);

}  // namespace twinsim
